// ellm: the command-line front end. Subcommands live in <name>_command.cc
// and run the same libraries as the daemon, on local files.
#include <cstdio>
#include <string>

#include "commands.h"
#include "ellm/engine/cpu_features.h"

namespace {

constexpr const char* kUsage =
    "usage: ellm <command> [options]\n"
    "commands:\n"
    "  info MODEL.gguf [--json] [--tensors]   validate a GGUF file and print its metadata\n"
    "  tokenize --model M --file F [--no-bos] [--special]  token ids of F as a JSON array\n"
    "  generate --model M (--prompt TEXT | --file F | --messages F.json) [--chat]\n"
    "           [--system TEXT] [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]\n"
    "           [--min-p P] [--repeat-penalty R] [--seed S] [--threads N] [--ctx N]\n"
    "           [--json-schema F] [--json]    generate text (only the text goes to stdout);\n"
    "                                         --messages: an OpenAI-style conversation,\n"
    "                                         --json-schema: the answer is JSON valid under F\n"
    "           [--chat-template NAME|F.jinja]  instead of the model's own chat template\n"
    "  perplexity --model M --file F --ctx N [--threads N] [--batch N] [--chunks N]\n"
    "           [KV flags]                    perplexity of a text file, as one JSON object\n"
    "  bench --model M --depth D --gen N [--threads T] [--batch N] [--streams S] [--json]\n"
    "           [KV flags]                    prefill/decode speed and peak RSS as JSON\n"
    "           KV flags: [--kv-type T] [--kv-budget MIB] [--spill-dir D] [--spill-level L]\n"
    "           [--spill-read copy|map] [--attn-weights W] [--attn-scores S]\n"
    "           [--sparse-attn K] [--sparse-sink N] [--sparse-local N]\n"
    "  extract FILE [--json|--outline] [--max-pages N]  what the model sees of a PDF,\n"
    "           [--max-bytes N] [--timeout S] [--memory-mib N] [--config FILE]\n"
    "           [--extractor PATH]            scan (PNG, JPEG, TIFF), .docx, .odt, HTML\n"
    "           [--headings auto|layout]      or text file; limits from the config's\n"
    "           [--ocr auto|off|force]        extract: section; headings from the PDF's\n"
    "           [--ocr-languages L] [--ocr-dpi N]  outline, else its layout; scanned\n"
    "                                         pages read by OCR\n"
    "  summarize FILE... [--pipeline P] [--model PATH] [--db PATH] [--json]\n"
    "           [--config FILE] [--pipelines DIR] [--ctx N] [--threads N]\n"
    "           [--params JSON] [--chat-template NAME]  run a pipeline on local files;\n"
    "           [--log-prompts FILE]          store the result; FILE: each generation\n"
    "           [KV flags]                    as a JSON line (prompt ids, limits, answer)\n"
    "           [--html FILE] [--no-model]    compare: the clause redline as a page; the\n"
    "                                         clause comparison alone (no model, no store)\n"
    "  compare A B [--pipeline compare-contracts] [summarize's options]  compare contracts\n"
    "  compare BASE AMENDMENT... --no-model [--json]  each version with the next, and\n"
    "                                         each clause's history through them\n"
    "  batch MANIFEST [--pipeline P] [--model PATH] [--db PATH]  a resumable run over a\n"
    "           [--config FILE] [--pipelines DIR] [--ctx N] [--threads N]\n"
    "           [--chat-template NAME]        YAML/CSV manifest of documents or pairs\n"
    "           [KV flags]\n"
    "  submit FILE... [--pipeline P] [--id ID] [--inline] [--config FILE] [--params JSON]\n"
    "           [--reply-to TOPIC] [--brokers B] [--topic T]  put a job on the daemon's\n"
    "                                         Kafka topic\n"
    "  jobs list [--status S] [--limit N] [--db PATH] [--config FILE] [--json]\n"
    "                                         jobs in the store, newest first\n"
    "  jobs show ID [--json] [--db PATH]      one job: status, documents, result, events\n"
    "  jobs prune [--older-than DAYS] [--db PATH]  delete finished jobs older than DAYS\n"
    "  store backup FILE [--db PATH] [--config FILE]  an online copy of the job store\n"
    "  serve --model M [--listen HOST:PORT] [--api-keys-file F] [--threads N] [--ctx N]\n"
    "           [--db PATH] [--sessions N] [--max-queue N] [--max-sessions-per-key N]\n"
    "           [--tls-cert F --tls-key F]\n"
    "           [--cors-origin O] [--max-body BYTES] [--config FILE] [--pipelines DIR]\n"
    "           [--chat-template NAME]        the OpenAI-compatible HTTP API (no Kafka)\n"
    "  model path | install FILE [--to PATH] [--config FILE]  where the configured model\n"
    "                                         lives; check a GGUF file loads and copy it\n"
    "                                         there atomically\n"
    "  cpu                                    CPU features and the kernel level in use\n"
    "  version, --version                     print the version\n"
    "  help [COMMAND]                         this text, or COMMAND's usage\n"
    "short flags: -m --model, -p --prompt, -f --file, -n --max-tokens, -c --ctx,\n"
    "             -t --threads, -s --seed (in the commands that take them)\n";

// CMD's lines of kUsage: its own lines and the indented ones under them,
// each command line prefixed with "ellm".
std::string UsageLines(const std::string& cmd) {
  std::string out;
  bool in = false;
  const std::string text = kUsage;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    const bool continuation = line.rfind("   ", 0) == 0;
    const std::string head = "  " + cmd;
    if (line.rfind(head, 0) == 0 &&
        (line.size() == head.size() || line[head.size()] == ' ' || line[head.size()] == ',')) {
      in = true;
      out += "  ellm " + line.substr(2) + "\n";
    } else if (in && continuation) {
      out += "     " + line + "\n";
    } else {
      in = false;
    }
  }
  return out;
}

// `ellm CMD --help`: CMD's lines of kUsage, with the lines they refer to
// (compare: summarize's options; "[KV flags]": the list under bench); ""
// for an unknown command.
std::string CommandHelp(const std::string& cmd) {
  std::string out = UsageLines(cmd);
  if (out.empty()) return out;
  if (cmd == "compare") out += UsageLines("summarize");
  if (out.find("[KV flags]") != std::string::npos && out.find("KV flags:") == std::string::npos) {
    const std::string text = kUsage;
    const size_t kv = text.find("           KV flags:");
    // It and the lines continuing it ("           [--...").
    size_t end = text.find('\n', kv);
    while (text.compare(end + 1, 12, "           [") == 0) end = text.find('\n', end + 1);
    const std::string lines = text.substr(kv, end + 1 - kv);
    for (size_t at = 0; at < lines.size();) {
      const size_t nl = lines.find('\n', at);
      out += "     " + lines.substr(at, nl + 1 - at);
      at = nl + 1;
    }
  }
  return "usage:\n" + out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  ellm::cli::Args args(argv + 2, argv + argc);
  // `ellm help CMD` is `ellm CMD --help`.
  if (cmd == "help" && !args.empty()) {
    cmd = args[0];
    args = {"--help"};
  }
  // Every command answers --help / -h on stdout with exit code 0
  // (tokenize prints its own, longer help).
  for (const std::string& a : args) {
    if ((a == "--help" || a == "-h") && cmd != "tokenize") {
      const std::string help = CommandHelp(cmd);
      if (help.empty()) break;
      std::fputs(help.c_str(), stdout);
      return 0;
    }
  }
  if (cmd == "info") return ellm::cli::Info(args);
  if (cmd == "generate") return ellm::cli::Generate(args);
  if (cmd == "perplexity") return ellm::cli::Perplexity(args);
  if (cmd == "bench") return ellm::cli::Bench(args);
  if (cmd == "tokenize") return ellm::cli::Tokenize(args);
  if (cmd == "extract") return ellm::cli::Extract(args);
  if (cmd == "jobs") return ellm::cli::Jobs(args);
  if (cmd == "store") return ellm::cli::Store(args);
  if (cmd == "summarize") return ellm::cli::Summarize(args);
  if (cmd == "compare") return ellm::cli::Compare(args);
  if (cmd == "submit") return ellm::cli::Submit(args);
  if (cmd == "batch") return ellm::cli::Batch(args);
  if (cmd == "model") return ellm::cli::Model(args);
  if (cmd == "serve") return ellm::cli::Serve(args);
  if (cmd == "cpu") {
    std::printf("%s\n", ellm::HostCpu().ToString().c_str());
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    std::printf("ellm %s\n", ELLM_VERSION);
    return 0;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "ellm: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}

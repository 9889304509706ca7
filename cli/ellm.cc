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
    "  generate --model M --prompt TEXT [--chat] [--max-tokens N] [--temperature T] [--seed S]\n"
    "           [--threads N] [--ctx N]       generate text (only the text goes to stdout)\n"
    "           [--chat-template NAME]        gemma, llama3 or chatml instead of the model's own\n"
    "  perplexity --model M --file F --ctx N  perplexity of a text file, as one JSON object\n"
    "  bench --model M --depth D --gen N [--threads T] [--json]\n"
    "                                         prefill/decode speed and peak RSS as JSON\n"
    "  extract FILE [--json] [--max-pages N]  the text the model sees of a PDF/.txt/.md file\n"
    "  summarize FILE... [--pipeline P] [--model PATH] [--db PATH] [--json]\n"
    "           [--chat-template NAME]        run a pipeline on local files; store the result\n"
    "  compare A B [--pipeline compare-contracts] [same options]  compare contracts\n"
    "  batch MANIFEST [--pipeline P] [--model PATH] [--db PATH]  a resumable run over a\n"
    "                                         YAML/CSV manifest of documents or pairs\n"
    "  submit FILE... [--pipeline P] [--id ID] [--inline] [--config FILE]\n"
    "                                         put a job on the daemon's Kafka topic\n"
    "  jobs list [--status S] [--db PATH] [--json]  jobs in the store, newest first\n"
    "  jobs show ID [--json] [--db PATH]      one job: status, documents, result, events\n"
    "  model path | install FILE [--to PATH]  where the configured model lives; check a\n"
    "                                         GGUF file loads and copy it there atomically\n"
    "  cpu                                    CPU features and the kernel level in use\n"
    "  version, --version                     print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  ellm::cli::Args args(argv + 2, argv + argc);
  if (cmd == "info") return ellm::cli::Info(args);
  if (cmd == "generate") return ellm::cli::Generate(args);
  if (cmd == "perplexity") return ellm::cli::Perplexity(args);
  if (cmd == "bench") return ellm::cli::Bench(args);
  if (cmd == "tokenize") return ellm::cli::Tokenize(args);
  if (cmd == "extract") return ellm::cli::Extract(args);
  if (cmd == "jobs") return ellm::cli::Jobs(args);
  if (cmd == "summarize") return ellm::cli::Summarize(args);
  if (cmd == "compare") return ellm::cli::Compare(args);
  if (cmd == "submit") return ellm::cli::Submit(args);
  if (cmd == "batch") return ellm::cli::Batch(args);
  if (cmd == "model") return ellm::cli::Model(args);
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

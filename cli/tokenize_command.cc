// ellm tokenize: the token ids of a file's text, as one JSON array on stdout
// (the form acceptance checks compare with llama.cpp's tokenizer).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "commands.h"
#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"
#include "flags.h"

namespace ellm::cli {
namespace {

constexpr const char* kTokenizeUsage =
    "usage: ellm tokenize --model MODEL.gguf --file TEXT [--no-bos] [--special]\n"
    "  --no-bos    do not prepend BOS (default: as the vocabulary says)\n"
    "  --special   recognise control tokens such as <start_of_turn> in the text\n";

}  // namespace

int Tokenize(const Args& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kTokenizeUsage, stdout);
      return 0;
    }
  }
  auto flags = Flags::Parse(args, {"model", "file"}, {"no-bos", "special"});
  if (!flags.ok() || !flags->positional().empty()) {
    std::fprintf(stderr, "ellm tokenize: %s\n%s",
                 flags.ok() ? ("unexpected argument " + flags->positional()[0]).c_str()
                            : flags.status().message().c_str(),
                 kTokenizeUsage);
    return 2;
  }
  const std::string model = flags->Get("model"), file = flags->Get("file");
  const bool add_bos = !flags->Has("no-bos"), parse_special = flags->Has("special");
  if (model.empty() || file.empty()) {
    std::fputs(kTokenizeUsage, stderr);
    return 2;
  }

  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ellm tokenize: cannot read text file '%s'\n", file.c_str());
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    std::fprintf(stderr, "ellm tokenize: error reading text file '%s'\n", file.c_str());
    return 1;
  }

  auto gguf = gguf::GgufFile::Open(model);
  if (!gguf.ok()) {
    std::fprintf(stderr, "ellm tokenize: %s\n", gguf.status().ToString().c_str());
    return 1;
  }
  auto tokenizer = Tokenizer::FromGguf(*gguf);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "ellm tokenize: %s\n", tokenizer.status().ToString().c_str());
    return 1;
  }

  const std::vector<TokenId> ids = (*tokenizer)->Encode(text, add_bos, parse_special);
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ids[i]);
  }
  out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace ellm::cli

// libFuzzer target for the chat-template interpreter (lexer, parser,
// interpreter, values, filters). Built only with -DELLM_FUZZ=ON and clang
// (tests/fuzz/CMakeLists.txt); run it with `scripts/fuzz jinja`. Seeds and
// what earlier runs found: tests/engine/chat/jinja_corpus/, which
// tests/engine/chat/jinja_corpus_test.cc replays in the ordinary build.
// ASan/UBSan catch memory and undefined-behaviour errors, libFuzzer's
// -timeout and -rss_limit_mb a template that runs or grows past the bounds
// of jinja_limits.h, and a broken promise of CheckJinjaFuzzInput traps.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "jinja_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string broken =
      ellm::jinja::CheckJinjaFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!broken.empty()) {
    std::fprintf(stderr, "jinja_fuzz: %s\n", broken.c_str());
    __builtin_trap();
  }
  return 0;
}

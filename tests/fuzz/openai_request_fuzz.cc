// libFuzzer target for the OpenAI request parser
// (server::ParseCompletionRequest, the bodies of /v1/chat/completions and
// /v1/completions). Built only with -DELLM_FUZZ=ON and clang
// (tests/fuzz/CMakeLists.txt); run it with `scripts/fuzz SECONDS
// openai_request`. Seeds: tests/server/openai_request_corpus/, which
// tests/server/openai_request_corpus_test.cc replays in the ordinary build.
//
// For any bytes, both endpoints' parses return a request or an error that
// says something, without a crash: ASan, UBSan, and the stack (nesting past
// the limit is refused before anything recursive reads it; schemas and
// tools are compiled as they are read, tool calls' arguments when the
// prompt is written).
#include <cstddef>
#include <cstdint>
#include <string>

#include "ellm/server/openai.h"
#include "ellm/server/tool_calls.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool chat : {true, false}) {
    const ellm::server::ParsedRequest p = ellm::server::ParseCompletionRequest(text, chat);
    if (p.error && p.error->message.empty()) __builtin_trap();
    if (p.error || !chat) continue;
    // The prompt's messages as the generic format writes them: a tool
    // call's arguments text is parsed there.
    ellm::server::ToolMessages(p.request.messages, p.request.tools, false);
  }
  return 0;
}

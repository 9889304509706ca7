// libFuzzer target for the front gate's request-head parser
// (server/http_head.h: what every byte a client sends before its body goes
// through). Built only with -DELLM_FUZZ=ON and clang; run it with
// `scripts/fuzz SECONDS http_head`. Seeds: tests/server/http_head_corpus/,
// which tests/server/http_head_test.cc replays in the ordinary build with
// the same promises:
// - HeadSize never looks past the limit;
// - a head parsed ok has a body within the limit, and its rewritten form is
//   itself one complete head ending in "Connection: close";
// - a refusal has a 4xx/5xx status and a message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ellm/server/http_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ellm::server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  HeadLimits limits;
  limits.max_bytes = 4096;
  limits.max_fields = 20;
  limits.max_body_bytes = 1 << 20;
  const size_t head = HeadSize(text, limits.max_bytes);
  if (head > text.size() || head > limits.max_bytes + 4) __builtin_trap();
  const HeadResult r = ParseRequestHead(text.substr(0, head != 0 ? head : text.size()), limits);
  if (r.ok) {
    if (!CouldBeRequest(text)) __builtin_trap();  // the gate would have refused it early
    if (r.head.content_length > limits.max_body_bytes) __builtin_trap();
    if (!r.head.forwarded.ends_with("Connection: close\r\n\r\n")) __builtin_trap();
    if (HeadSize(r.head.forwarded, 1 << 20) != r.head.forwarded.size()) __builtin_trap();
  } else if (r.refusal.status < 400 || r.refusal.message.empty()) {
    __builtin_trap();
  }
  return 0;
}

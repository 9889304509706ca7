// libFuzzer target for the multipart door of POST /v1/jobs: cpp-httplib's
// multipart parser (the library the API serves with) and the form-to-job
// conversion behind it (server/job_request.h), through a real server on
// 127.0.0.1 (tests/fuzz/multipart_harness.h says what an input is and what
// is promised). Built only with -DELLM_FUZZ=ON and clang; run it with
// `scripts/fuzz SECONDS multipart`. The library itself is Debian's shared
// build, not instrumented: coverage guides the fuzzer through our code, and
// a crash or an unanswered request anywhere is still found. Seeds:
// tests/server/multipart_corpus/, replayed by
// tests/server/multipart_corpus_test.cc in the ordinary build.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "multipart_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ellm::testing::MultipartHarness* harness = new ellm::testing::MultipartHarness();
  const ellm::testing::MultipartResult r =
      harness->Send(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!r.violation.empty()) {
    fprintf(stderr, "multipart: %s\n", r.violation.c_str());
    __builtin_trap();
  }
  return 0;
}

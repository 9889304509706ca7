// libFuzzer target for the job message parser (ingest::ParseJobMessage: what
// ellmd reads from Kafka and POST /v1/jobs checks). Built only with
// -DELLM_FUZZ=ON and clang (tests/fuzz/CMakeLists.txt); run it with
// `scripts/fuzz SECONDS job_message`. Seeds: tests/ingest/job_message_corpus/,
// which tests/ingest/job_message_corpus_test.cc replays in the ordinary build.
//
// For any bytes the parser returns a job or an error that says something,
// without a crash: ASan, UBSan, and the stack (nesting past the limit is
// refused before anything recursive reads it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ellm/ingest/job_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ellm::ingest::JobMessageLimits limits;
  limits.pipelines = {"summarize-report", "document-stats"};
  limits.allowed_roots = {"/nonexistent-ellm-fuzz-root"};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ellm::ingest::ParsedJob p = ellm::ingest::ParseJobMessage(text, "", limits);
  if (p.ok() == p.error.empty()) return 0;
  __builtin_trap();
}

// libFuzzer target for what the parent reads from the PDF extractor child
// (ingest/extract/protocol.h): the child parses hostile documents, so a PDF
// that took it over decides every byte it writes. The parent's readers,
// DocumentFromJson (exit 0) and DecodeExtractorError (exit 3), must turn
// any bytes into a Document or an error, without a crash: ASan, UBSan and
// the stack. Built only with -DELLM_FUZZ=ON and clang; run it with
// `scripts/fuzz SECONDS extractor_output`. Seeds:
// tests/ingest/extractor_output_corpus/, which
// tests/ingest/extractor_output_corpus_test.cc replays in the ordinary build.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "extract/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ellm::StatusOr<ellm::ingest::Document> doc = ellm::ingest::DocumentFromJson(text);
  if (doc.ok()) {
    int last = 0;
    for (const ellm::ingest::Page& p : doc->pages) {
      if (p.number <= last) __builtin_trap();  // page numbers only rise
      last = p.number;
    }
  }
  // A report is always an error, and always one of the extractor's kinds.
  const ellm::Status error = ellm::ingest::DecodeExtractorError(text);
  if (error.ok() || !ellm::ingest::ExtractErrorOf(error).has_value()) __builtin_trap();
  return 0;
}

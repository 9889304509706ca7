// libFuzzer target for the Word and OpenDocument reader the ellm-extract
// child runs on uploaded files (ingest/office/office_to_document.h): any
// bytes must become a Document or an ExtractError, within the depth and
// size bounds, without a crash. Built only with -DELLM_FUZZ=ON and clang;
// run it with `scripts/fuzz SECONDS office`. Seeds:
// tests/ingest/office_corpus/ (ZIPs deflated and stored, an encrypted and a
// truncated file), which tests/ingest/office_corpus_test.cc replays in the
// ordinary build.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "office/office_to_document.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const ellm::StatusOr<ellm::ingest::Document> doc =
      ellm::ingest::office::OfficeToDocument(bytes, "fuzz.docx");
  if (!doc.ok()) {
    // Every failure is one of the extractor's kinds: the parent reports it.
    if (!ellm::ingest::ExtractErrorOf(doc.status()).has_value()) __builtin_trap();
    return 0;
  }
  // What the child writes, the parent must read back.
  if (!ellm::ingest::DocumentFromJson(ellm::ingest::ToJson(*doc)).ok()) __builtin_trap();
  return 0;
}

// libFuzzer target for the web pages the ellm-extract child reads
// (ingest/office/html.h: libxml2's HTML parser and our walk over its tree):
// any bytes must become a Document or an ExtractError, within the depth
// and size bounds, without a crash; what the child writes, the parent must
// read back. Built only with -DELLM_FUZZ=ON and clang; run it with
// `scripts/fuzz SECONDS html`. Seeds: tests/ingest/html_corpus/
// (tests/fuzz/make_html_seeds.py), which tests/ingest/html_test.cc replays
// in the ordinary build.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "office/html.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const ellm::StatusOr<ellm::ingest::Document> doc =
      ellm::ingest::office::HtmlToDocument(bytes, "fuzz.html");
  if (!doc.ok()) {
    if (!ellm::ingest::ExtractErrorOf(doc.status()).has_value()) __builtin_trap();
    return 0;
  }
  if (!ellm::ingest::DocumentFromJson(ellm::ingest::ToJson(*doc)).ok()) __builtin_trap();
  return 0;
}

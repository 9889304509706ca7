// The poppler-cpp adapter: opens a PDF from memory and reads its metadata
// and word boxes. The only file that includes poppler; poppler exceptions
// and error messages stop here. Used only by the ellm-extract child: a
// hostile PDF may still crash or hang poppler, which is why it runs there.
// Not thread-safe (poppler's error callback is process-global).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "pdf/layout.h"
#include "pdf/ocr.h"

namespace poppler {
class document;
}  // namespace poppler

namespace ellm::ingest::pdf {

struct PdfInfo {
  std::string title, author, producer;  // UTF-8 (NFC); empty if absent
  int page_count = 0;
};

class PdfFile {
 public:
  // Parses `bytes` (the whole file). Errors carry ExtractError reasons:
  // kEncrypted (a user password is needed), kDamaged (poppler cannot open
  // it, with poppler's last error messages). `name` is used in messages.
  static StatusOr<std::unique_ptr<PdfFile>> Open(std::string bytes, const std::string& name);
  ~PdfFile();

  PdfInfo Info() const;
  // The file's bytes, as given to Open.
  const std::string& bytes() const { return bytes_; }
  // The words of page `index` (0-based), text normalised (NFC, ligatures).
  // A page poppler cannot read yields no words.
  std::vector<Word> PageWords(int index) const;
  // Page `index` as grey pixels at `dpi`, or at the lower resolution that
  // keeps it within `max_pixels`; an empty image when poppler cannot
  // render it. Fonts the PDF does not embed are drawn without a system
  // font lookup (the sandbox forbids fontconfig's cache): their glyphs may
  // be missing from the image, which only a page with a text layer has.
  GrayImage RenderPage(int index, double dpi, int64_t max_pixels) const;

 private:
  PdfFile() = default;
  std::string bytes_;  // poppler reads from this buffer for the document's lifetime
  std::unique_ptr<poppler::document> doc_;
};

// poppler's most recent error messages (at most a few, newest last), joined
// by "; ". Cleared by PdfFile::Open.
std::string RecentPopplerErrors();

}  // namespace ellm::ingest::pdf

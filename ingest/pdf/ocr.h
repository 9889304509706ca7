// Optical character recognition of a rendered page, with Tesseract (the
// only file that includes it). Used only by the ellm-extract child, inside
// its sandbox: Tesseract reads its language data read-only from
// /usr/share/tesseract-ocr (Landlock allows it) and runs on this thread
// (the parent sets OMP_THREAD_LIMIT=1, so libgomp starts no threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "pdf/layout.h"

namespace ellm::ingest::pdf {

// An 8-bit grey image of a page: row-major, `stride` bytes per row.
struct GrayImage {
  int width = 0, height = 0, stride = 0;
  std::vector<uint8_t> pixels;
  double dpi = 0;  // pixels per inch it was rendered at
};

struct OcrOptions {
  std::string languages = "eng";  // Tesseract's form: "eng", "eng+deu"
  int page_seconds = 60;          // Tesseract stops a page after this long
};

// What OCR read on one page: the words with boxes in PDF points (as the
// text layer gives them), their mean confidence weighted by length (0-1;
// 0 when there are none), and whether the page's time ran out.
struct OcrPage {
  std::vector<Word> words;
  double confidence = 0;
  bool timed_out = false;
};

class PageReader {
 public:
  // Loads the languages' data. Errors name the language and its Debian
  // package (tesseract-ocr-LANG) when one is missing, and a malformed
  // `languages` string (letters, digits, '_' and '+' only).
  static StatusOr<std::unique_ptr<PageReader>> Create(const OcrOptions& options);
  ~PageReader();

  OcrPage Read(const GrayImage& image);

 private:
  struct Impl;
  explicit PageReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Tesseract's version ("5.3.0"), for `ellm info` and messages.
std::string OcrEngineVersion();

}  // namespace ellm::ingest::pdf

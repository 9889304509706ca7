// Tesseract OCR of a rendered page (see ocr.h).
#include "pdf/ocr.h"

#include <tesseract/baseapi.h>
#include <tesseract/ocrclass.h>
#include <tesseract/resultiterator.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

#include "ellm/ingest/extract.h"
#include "text/normalize.h"

namespace ellm::ingest::pdf {
namespace {

// Specks and rules read as punctuation: a word with no letter or digit is
// dropped below this confidence (0-100). Words with letters are kept
// however unsure Tesseract is: short real words ("met", "in") often score
// below 15.
constexpr float kPunctFloor = 50;

bool ValidLanguages(const std::string& s) {
  if (s.empty() || s.size() > 64 || s.front() == '+' || s.back() == '+') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '+';
  });
}

bool HasLetterOrDigit(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x80 || (u >= '0' && u <= '9') || ((u | 0x20) >= 'a' && (u | 0x20) <= 'z');
  });
}

// A word's box as a text layer gives it: the row's full height (ascender
// to descender, from its baseline and font metrics) rather than the ink's,
// so that words with and without descenders, and the lines they make, are
// the same size, and the gap between lines is the leading. Keeps `top` and
// `bottom` (the ink's) when Tesseract has no baseline.
void RowBox(const tesseract::ResultIterator& it, int left, int right, int* top, int* bottom) {
  float height = 0, descenders = 0, ascenders = 0;
  it.RowAttributes(&height, &descenders, &ascenders);
  int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  if (!(height > 0) || !it.Baseline(tesseract::RIL_TEXTLINE, &x1, &y1, &x2, &y2)) return;
  const double mid = 0.5 * (left + right);
  const double baseline = x2 == x1 ? y1 : y1 + (y2 - y1) * (mid - x1) / (x2 - x1);
  // descenders is negative: below the baseline.
  const double low = baseline - std::min(0.0f, descenders);
  *bottom = static_cast<int>(std::lround(low));
  *top = static_cast<int>(std::lround(low - height));
}

// OCR reads the I of a Roman numeral as l, | or 1 ("ARTICLE Il", "Part
// 1V", "ARTICLE |") where the font draws them alike. After a word that
// numbers a part of a document, a word made of Roman digits and such
// look-alikes is the numeral: "l" and "|" alone too, but a 1 only beside a
// real Roman capital ("ARTICLE 1" is Arabic).
void RepairRomanNumeral(const std::string& previous, std::string* word) {
  static constexpr std::string_view kNumbered[] = {
      "ARTICLE", "Article", "PART",  "Part",  "SCHEDULE", "Schedule", "SECTION", "Section",
      "CHAPTER", "Chapter", "ANNEX", "Annex", "APPENDIX", "Appendix", "TITLE",   "Title"};
  if (std::find(std::begin(kNumbered), std::end(kNumbered), previous) == std::end(kNumbered)) {
    return;
  }
  size_t end = word->find_last_not_of("-.:)");
  if (end == std::string::npos) return;
  bool roman = false, lookalike = false, one = false;
  for (size_t i = 0; i <= end; ++i) {
    const char c = (*word)[i];
    if (c == 'l' || c == '|') {
      lookalike = true;
    } else if (c == '1') {
      one = true;
    } else if (std::string_view("IVXLC").find(c) != std::string_view::npos) {
      roman = true;
    } else {
      return;
    }
  }
  if (!(roman && (lookalike || one)) && !(lookalike && !one)) return;
  for (size_t i = 0; i <= end; ++i) {
    char& c = (*word)[i];
    if (c == 'l' || c == '|' || c == '1') c = 'I';
  }
}

}  // namespace

struct PageReader::Impl {
  tesseract::TessBaseAPI api;
  OcrOptions options;
};

PageReader::PageReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PageReader::~PageReader() {
  if (impl_) impl_->api.End();
}

StatusOr<std::unique_ptr<PageReader>> PageReader::Create(const OcrOptions& options) {
  if (!ValidLanguages(options.languages)) {
    return InvalidArgumentError("OCR languages '" + options.languages +
                                "' are not in Tesseract's form (for example eng or eng+deu)");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  // Tesseract loads the languages it finds and only warns about the rest:
  // every one asked for must be loaded.
  std::vector<std::string> asked, loaded;
  for (size_t start = 0; start <= options.languages.size();) {
    size_t end = options.languages.find('+', start);
    if (end == std::string::npos) end = options.languages.size();
    asked.push_back(options.languages.substr(start, end - start));
    start = end + 1;
  }
  // LSTM only: the data Debian ships for Tesseract 5 has no legacy models.
  if (impl->api.Init(nullptr, options.languages.c_str(), tesseract::OEM_LSTM_ONLY) == 0) {
    impl->api.GetLoadedLanguagesAsVector(&loaded);
  }
  std::string missing;
  for (const std::string& lang : asked) {
    if (std::find(loaded.begin(), loaded.end(), lang) == loaded.end()) {
      missing += (missing.empty() ? "" : ", ") + std::string("tesseract-ocr-") + lang;
    }
  }
  if (!missing.empty()) {
    return MakeExtractError(ExtractError::kUnreadable, "Tesseract cannot load the OCR languages '" +
                                                           options.languages + "' (is Debian's " +
                                                           missing + " installed?)");
  }
  impl->api.SetPageSegMode(tesseract::PSM_AUTO);
  return std::unique_ptr<PageReader>(new PageReader(std::move(impl)));
}

OcrPage PageReader::Read(const GrayImage& image) {
  OcrPage page;
  if (image.width <= 0 || image.height <= 0) return page;
  tesseract::TessBaseAPI& api = impl_->api;
  api.SetImage(image.pixels.data(), image.width, image.height, 1, image.stride);
  api.SetSourceResolution(static_cast<int>(image.dpi + 0.5));
  tesseract::ETEXT_DESC monitor;
  monitor.set_deadline_msecs(impl_->options.page_seconds * 1000);
  api.Recognize(&monitor);
  page.timed_out = monitor.deadline_exceeded();
  std::unique_ptr<tesseract::ResultIterator> it(api.GetIterator());
  const double scale = 72.0 / image.dpi;  // pixels -> points
  double weighted = 0, weight = 0;
  if (it) {
    do {
      std::unique_ptr<char[]> utf8(it->GetUTF8Text(tesseract::RIL_WORD));
      if (!utf8) continue;
      std::string text = text::NormalizeText(utf8.get());
      const size_t first = text.find_first_not_of(" \t\r\n");
      text = first == std::string::npos
                 ? std::string()
                 : text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
      const float conf = it->Confidence(tesseract::RIL_WORD);
      const bool letters = HasLetterOrDigit(text);
      if (text.empty() || (!letters && conf < kPunctFloor)) continue;
      int l = 0, t = 0, r = 0, b = 0;
      if (!it->BoundingBox(tesseract::RIL_WORD, &l, &t, &r, &b)) continue;
      Word w;
      w.x0 = l * scale;
      w.x1 = r * scale;
      RowBox(*it, l, r, &t, &b);
      w.y0 = t * scale;
      w.y1 = b * scale;
      w.font_size = (b - t) * scale;
      w.space_after = true;
      if (!page.words.empty()) RepairRomanNumeral(page.words.back().text, &text);
      weighted += conf * static_cast<double>(text.size());
      weight += static_cast<double>(text.size());
      w.text = std::move(text);
      page.words.push_back(std::move(w));
    } while (it->Next(tesseract::RIL_WORD));
  }
  page.confidence = weight > 0 ? weighted / weight / 100.0 : 0;
  api.Clear();
  return page;
}

std::string OcrEngineVersion() { return tesseract::TessBaseAPI::Version(); }

}  // namespace ellm::ingest::pdf

// PDF bytes -> Document (see pdf_to_document.h).
#include "pdf/pdf_to_document.h"

#include <cctype>
#include <memory>

#include "ellm/ingest/extract.h"
#include "pdf/layout.h"
#include "pdf/ocr.h"
#include "pdf/pdf_outline.h"
#include "pdf/poppler_pdf.h"
#include "text/headings.h"
#include "text/layout_headings.h"
#include "text/normalize.h"
#include "text/paragraphs.h"
#include "text/running_lines.h"

namespace ellm::ingest::pdf {

namespace {

// The outline as the document's heading tree. An entry whose destination
// names no page takes the page of the entry before it.
std::vector<Heading> HeadingsFromOutline(const std::vector<OutlineEntry>& outline) {
  std::vector<Heading> headings;
  int page = 1;
  for (const OutlineEntry& e : outline) {
    if (e.page > 0) page = e.page;
    auto [number, title] = text::SplitHeadingNumber(e.title);
    headings.push_back({e.level, std::move(number), std::move(title), page});
  }
  return headings;
}

// Letters and digits on a page's text layer, and glyphs that decode to
// nothing readable (U+FFFD, private use, control characters).
struct LayerCounts {
  int readable = 0, garbage = 0;
};

LayerCounts CountLayer(const std::vector<Word>& words) {
  LayerCounts n;
  for (const Word& w : words) {
    for (size_t i = 0; i < w.text.size();) {
      const auto c = static_cast<unsigned char>(w.text[i]);
      const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      if (c < 0x80) {
        if (std::isalnum(c)) ++n.readable;
        if (c < 0x20) ++n.garbage;
      } else if (w.text.compare(i, 3, "\xEF\xBF\xBD") == 0 ||  // U+FFFD
                 (c == 0xEE || (c == 0xEF && i + 1 < w.text.size() &&
                                static_cast<unsigned char>(w.text[i + 1]) < 0xA4))) {
        ++n.garbage;  // U+E000..U+F8FF, the private use area
      } else {
        ++n.readable;
      }
      i += len;
    }
  }
  return n;
}

// A text layer too thin to be the page's text: a scan's stray characters.
constexpr int kThinLayer = 20;

class OcrPass {
 public:
  OcrPass(const PdfFile& pdf, const PdfOptions& options) : pdf_(pdf), options_(options) {}

  // Page `index`'s words: from its text layer or, where options.ocr says,
  // from OCR of its image, with `page` told which.
  StatusOr<std::vector<Word>> Words(int index, Page* page) {
    std::vector<Word> layer = pdf_.PageWords(index);
    if (options_.ocr == OcrMode::kOff) return layer;
    const LayerCounts counts = CountLayer(layer);
    const bool usable = counts.readable >= kThinLayer && counts.garbage * 3 < counts.readable;
    if (options_.ocr == OcrMode::kAuto && usable) return layer;
    if (!reader_) {
      ELLM_ASSIGN_OR_RETURN(reader_,
                            PageReader::Create({.languages = options_.ocr_languages,
                                                .page_seconds = options_.ocr_page_seconds}));
    }
    OcrPage ocr = reader_->Read(pdf_.RenderPage(index, options_.ocr_dpi, options_.ocr_max_pixels));
    const LayerCounts read = CountLayer(ocr.words);
    if (options_.ocr == OcrMode::kAuto && !layer.empty() && read.readable <= counts.readable) {
      return layer;  // OCR did no better than the thin layer
    }
    DescribeOcrPage(ocr, options_.ocr_page_seconds, page);
    return std::move(ocr.words);
  }

 private:
  const PdfFile& pdf_;
  const PdfOptions& options_;
  std::unique_ptr<PageReader> reader_;
};

}  // namespace

void DescribeOcrPage(const OcrPage& ocr, int page_seconds, Page* page) {
  page->read_by = std::string(kReadByOcr);
  page->ocr_confidence = static_cast<int>(ocr.confidence * 100 + 0.5);
  if (ocr.timed_out) {
    page->ocr_note = "stopped at the " + std::to_string(page_seconds) + " s page limit";
  } else if (ocr.words.empty()) {
    page->ocr_note = "no text found";
  } else if (page->ocr_confidence < 60) {
    page->ocr_note = "low confidence";
  }
}

bool AssembleText(std::vector<std::vector<Word>> words, Document* doc) {
  // Whole-document passes need every page's lines: running lines repeat
  // across pages, and hyphen repair looks for words anywhere.
  std::vector<text::PageLines> pages(words.size());
  text::HyphenEvidence evidence;
  bool any_text = false;
  for (size_t i = 0; i < words.size(); ++i) {
    pages[i] = LayoutPage(std::move(words[i]));
    for (const text::TextLine& line : pages[i]) {
      evidence.AddLine(line.text);
      any_text = any_text || !line.text.empty();
    }
  }
  if (!any_text) return false;
  text::RemoveRunningLines(&pages);
  if (doc->headings.empty()) doc->headings = text::HeadingsFromLayout(pages);
  for (size_t i = 0; i < pages.size(); ++i) {
    doc->pages[i].number = static_cast<int>(i) + 1;
    doc->pages[i].text = text::TidyWhitespace(text::AssemblePage(pages[i], evidence));
  }
  return true;
}

StatusOr<Document> PdfToDocument(std::string bytes, const std::string& name,
                                 const PdfOptions& options) {
  const int max_pages = options.max_pages;
  ELLM_ASSIGN_OR_RETURN(std::unique_ptr<PdfFile> pdf, PdfFile::Open(std::move(bytes), name));
  const PdfInfo info = pdf->Info();
  if (info.page_count > max_pages) {
    return MakeExtractError(ExtractError::kTooManyPages,
                            name + ": " + std::to_string(info.page_count) +
                                " pages, above the limit of " + std::to_string(max_pages));
  }
  Document doc;
  doc.metadata.media_type = std::string(kMediaTypePdf);
  doc.metadata.title = info.title;
  doc.metadata.author = info.author;
  doc.metadata.producer = info.producer;
  doc.metadata.page_count = info.page_count;

  doc.pages.resize(info.page_count);
  std::vector<std::vector<Word>> words(info.page_count);
  OcrPass ocr(*pdf, options);
  for (int i = 0; i < info.page_count; ++i) {
    ELLM_ASSIGN_OR_RETURN(words[i], ocr.Words(i, &doc.pages[i]));
  }
  if (!options.headings_from_layout)
    doc.headings = HeadingsFromOutline(ReadPdfOutline(pdf->bytes()));
  if (!AssembleText(std::move(words), &doc)) {
    return MakeExtractError(
        ExtractError::kNoTextLayer,
        name + ": no text layer on any of its " + std::to_string(info.page_count) + " pages" +
            (options.ocr == OcrMode::kOff
                 ? "; it looks like a scanned document, and OCR is off (extract.ocr)"
                 : ", and OCR read no words on them"));
  }
  return doc;
}

}  // namespace ellm::ingest::pdf

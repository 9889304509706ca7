// PDF bytes -> Document, in this process: poppler, layout, then the text
// stages (running lines, hyphen repair, NFC, whitespace). This is what the
// ellm-extract child runs; everything else calls ExtractDocument
// (extract.h), which runs it in that child.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/ingest/document.h"
#include "ellm/ingest/extract.h"
#include "pdf/layout.h"
#include "pdf/ocr.h"

namespace ellm::ingest::pdf {

struct PdfOptions {
  int max_pages = 2000;
  bool headings_from_layout = false;
  OcrMode ocr = OcrMode::kOff;  // see OcrMode (extract.h)
  std::string ocr_languages = "eng";
  int ocr_dpi = 300;
  int ocr_page_seconds = 60;
  // A page is rendered at a lower resolution than ocr_dpi when it would
  // have more pixels than this (an A4 page at 300 dpi has 8.7 million).
  int64_t ocr_max_pixels = 40'000'000;
};

// Errors carry ExtractError reasons: kEncrypted, kDamaged, kTooManyPages
// (above `max_pages`), kNoTextLayer (no page has text, and OCR is off or
// read none; names the page count), kUnreadable (OCR's languages cannot be
// loaded). `name` is used in messages. The result's metadata has
// media_type, title, author, producer and page_count; the caller fills the
// rest. Headings: the PDF's outline when it has one (unless
// `headings_from_layout`), else from the page layout
// (text/layout_headings.h). Pages read by OCR say so (Page::read_by).
StatusOr<Document> PdfToDocument(std::string bytes, const std::string& name,
                                 const PdfOptions& options);

// Shared with ImageToDocument (image_to_document.h):
// What OCR read of a page, told to `page`: read_by, confidence and note.
void DescribeOcrPage(const OcrPage& ocr, int page_seconds, Page* page);
// The text stages over a whole document's pages of words: layout, running
// lines (repeated across pages), hyphen repair, and the heading tree from
// the layout when doc->headings is empty. doc->pages has one entry per
// element of `words`; each gets its number (1..n) and text. false when no
// page has any text (the pages are then left as they were).
bool AssembleText(std::vector<std::vector<Word>> words, Document* doc);

}  // namespace ellm::ingest::pdf

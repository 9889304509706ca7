// PDF bytes -> Document (see pdf_to_document.h).
#include "pdf/pdf_to_document.h"

#include "ellm/ingest/extract.h"
#include "pdf/layout.h"
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

}  // namespace

StatusOr<Document> PdfToDocument(std::string bytes, const std::string& name, int max_pages,
                                 bool headings_from_layout) {
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

  // Whole-document passes need every page's lines: running lines repeat
  // across pages, and hyphen repair looks for words anywhere.
  std::vector<text::PageLines> pages(info.page_count);
  text::HyphenEvidence evidence;
  bool any_text = false;
  for (int i = 0; i < info.page_count; ++i) {
    pages[i] = LayoutPage(pdf->PageWords(i));
    for (const text::TextLine& line : pages[i]) {
      evidence.AddLine(line.text);
      any_text = any_text || !line.text.empty();
    }
  }
  if (!any_text) {
    return MakeExtractError(ExtractError::kNoTextLayer,
                            name + ": no text layer on any of its " +
                                std::to_string(info.page_count) +
                                " pages; it looks like a scanned document (OCR is not supported)");
  }
  text::RemoveRunningLines(&pages);
  if (!headings_from_layout) doc.headings = HeadingsFromOutline(ReadPdfOutline(pdf->bytes()));
  if (doc.headings.empty()) doc.headings = text::HeadingsFromLayout(pages);
  for (int i = 0; i < info.page_count; ++i) {
    doc.pages.push_back({i + 1, text::TidyWhitespace(text::AssemblePage(pages[i], evidence))});
  }
  return doc;
}

}  // namespace ellm::ingest::pdf

// Document: what ingest makes of one input file (a PDF, a plain-text or a
// Markdown file) and what pipelines feed the model. A document is metadata
// plus pages, each page's text in reading order, already cleaned (running
// headers/footers removed, hyphenation repaired, NFC, tables as
// "cell | cell" rows). The JSON form is how the sandboxed extractor child
// hands a document to its parent, and what `ellm extract --json` prints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::ingest {

inline constexpr std::string_view kMediaTypePdf = "application/pdf";
inline constexpr std::string_view kMediaTypeText = "text/plain";
inline constexpr std::string_view kMediaTypeMarkdown = "text/markdown";
inline constexpr std::string_view kMediaTypeDocx =
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
inline constexpr std::string_view kMediaTypeOdt = "application/vnd.oasis.opendocument.text";
inline constexpr std::string_view kMediaTypeHtml = "text/html";

struct DocumentMetadata {
  std::string source;      // the path the document was read from, as given
  std::string media_type;  // one of the kMediaType* above
  std::string title;       // from the PDF Info dictionary; empty if absent
  std::string author;
  std::string producer;
  int page_count = 0;     // pages in the file (text files: 1)
  int64_t byte_size = 0;  // size of the input file in bytes
  std::string sha256;     // of the input file's bytes, 64 lower-case hex digits
};

inline constexpr std::string_view kReadByText = "text";  // the file's text (a PDF's text layer)
inline constexpr std::string_view kReadByOcr = "ocr";    // OCR of the page's image

struct Page {
  int number = 0;    // 1-based page number in the file
  std::string text;  // UTF-8 (NFC); paragraphs separated by one blank line
  std::string read_by = std::string(kReadByText);  // kReadByText or kReadByOcr
  // OCR pages only: the words' mean confidence in percent (length-weighted),
  // and what the reader should know, empty when nothing: "low confidence"
  // (below 60), "no text found" (a blank page, a photo), "stopped at the N s
  // page limit".
  int ocr_confidence = 0;
  std::string ocr_note;
};

// One entry of the document's own heading tree, in document order: from a
// Word or OpenDocument file's heading styles (and their numbering).
struct Heading {
  int level = 1;       // 1 = chapter, 2 = section, ...
  std::string number;  // as the reader sees it ("3", "2.1", "ARTICLE V"); may be empty
  std::string title;   // the heading's text without its number
  int page = 1;        // the Page::number it starts on
};

struct Document {
  DocumentMetadata metadata;
  std::vector<Page> pages;
  std::vector<Heading> headings;  // empty when the file gives none
};

// The text the model sees. For a PDF every page starts with a marker line
// "[page N]" (N = Page::number) followed by the page's text, and pages are
// separated by a blank line, so answers can cite pages:
//
//   [page 1]
//   First page text...
//
//   [page 2]
//   ...
//
// Word and OpenDocument files are paginated only where they break pages
// explicitly; one without page breaks, like text and Markdown files, is
// returned as is.
std::string RenderForModel(const Document& doc);

// The JSON form, versioned (append-only fields):
//   {"format": "ellm.document", "version": 1,
//    "metadata": {"source", "media_type", "title", "author", "producer",
//                 "page_count", "byte_size", "sha256"},
//    "pages": [{"number": 1, "text": "..."}, ...],
//    "headings": [{"level": 1, "number": "1", "title": "...", "page": 1}, ...]}
// ("headings" is optional when read: children before it wrote none).
// `indent` < 0 writes one line; otherwise pretty-prints with that indent.
std::string ToJson(const Document& doc, int indent = -1);
// Parses and validates the form above (types, page numbers >= 1 and
// increasing, UTF-8). Errors say which field is wrong.
StatusOr<Document> DocumentFromJson(std::string_view json);

}  // namespace ellm::ingest

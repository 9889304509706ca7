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

struct Page {
  int number = 0;    // 1-based page number in the file
  std::string text;  // UTF-8 (NFC); paragraphs separated by one blank line
};

struct Document {
  DocumentMetadata metadata;
  std::vector<Page> pages;
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
// Text and Markdown files are not paginated: their text is returned as is.
std::string RenderForModel(const Document& doc);

// The JSON form, versioned (append-only fields):
//   {"format": "ellm.document", "version": 1,
//    "metadata": {"source", "media_type", "title", "author", "producer",
//                 "page_count", "byte_size", "sha256"},
//    "pages": [{"number": 1, "text": "..."}, ...]}
// `indent` < 0 writes one line; otherwise pretty-prints with that indent.
std::string ToJson(const Document& doc, int indent = -1);
// Parses and validates the form above (types, page numbers >= 1 and
// increasing, UTF-8). Errors say which field is wrong.
StatusOr<Document> DocumentFromJson(std::string_view json);

}  // namespace ellm::ingest

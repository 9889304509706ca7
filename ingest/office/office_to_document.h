// Word (.docx) and OpenDocument text (.odt) bytes -> Document, in this
// process: what the ellm-extract child runs for a ZIP or an OLE compound
// file (everything else calls ExtractDocument, which runs it there).
//
// The text is the document as it reads with every tracked change accepted
// (insertions kept, deletions dropped); comments, footnote marks and field
// codes are left out. Headings come from the heading styles (and outline
// levels), with the numbers Word or LibreOffice show before them; table
// rows become "cell | cell" lines; explicit page breaks (and the page
// breaks Word recorded when it last laid the file out) start new pages.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "ellm/ingest/document.h"

namespace ellm::ingest::office {

// Errors carry ExtractError reasons: kEncrypted (a password-protected Word
// or OpenDocument file), kUnsupportedType (a ZIP that is no text document,
// e.g. a spreadsheet, or a Word 97-2003 .doc), kDamaged (a broken archive or
// XML), kResourceLimit (a part that expands beyond kMaxPartBytes),
// kNoTextLayer (no text at all). `name` is used in messages. The result's
// metadata has media_type, title, author, producer and page_count.
// The text an image embedded in the document shows (OCR, in the extractor
// child; issue 58 item 3), "" when it shows none or cannot be read. Null:
// images are skipped. A Word or OpenDocument file's pictures (at most
// kMaxImages) join the text after the paragraph (or table) that holds
// them, one paragraph each.
using ImageTextFn = std::function<std::string(std::string_view image_bytes)>;
inline constexpr int kMaxImages = 50;

StatusOr<Document> OfficeToDocument(const std::string& bytes, const std::string& name,
                                    const ImageTextFn& image_text = nullptr);

// Internals, exposed for the tests.
StatusOr<Document> DocxToDocument(const std::string& bytes, const std::string& name,
                                  const ImageTextFn& image_text = nullptr);
StatusOr<Document> OdtToDocument(const std::string& bytes, const std::string& name,
                                 const ImageTextFn& image_text = nullptr);

}  // namespace ellm::ingest::office

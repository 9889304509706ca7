// PDF bytes -> Document, in this process: poppler, layout, then the text
// stages (running lines, hyphen repair, NFC, whitespace). This is what the
// ellm-extract child runs; everything else calls ExtractDocument
// (extract.h), which runs it in that child.
#pragma once

#include <string>

#include "ellm/base/status.h"
#include "ellm/ingest/document.h"

namespace ellm::ingest::pdf {

// Errors carry ExtractError reasons: kEncrypted, kDamaged, kTooManyPages
// (above `max_pages`), kNoTextLayer (no page has text; names the page
// count). `name` is used in messages. The result's metadata has media_type,
// title, author, producer and page_count; the caller fills the rest.
// Headings: the PDF's outline when it has one (unless `headings_from_layout`),
// else from the page layout (text/layout_headings.h).
StatusOr<Document> PdfToDocument(std::string bytes, const std::string& name, int max_pages,
                                 bool headings_from_layout = false);

}  // namespace ellm::ingest::pdf

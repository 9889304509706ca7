// HTML bytes -> Document, in this process: what the ellm-extract child runs
// for a web page (`--kind html`; everything else calls ExtractDocument,
// which runs it there). libxml2's HTML parser reads the page as a browser
// would (unclosed tags, stray text); the walk takes the body's text in
// document order: h1-h6 as the heading tree, p/div/li/... as paragraphs
// (list items marked "- " or "3. "), tables as Markdown tables (their
// header row first), and leaves out scripts, styles, embedded objects and
// what the page hides (hidden, aria-hidden). One page; the <title> is the
// document's title.
#pragma once

#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "ellm/ingest/document.h"

namespace ellm::ingest::office {

// Errors carry ExtractError reasons: kResourceLimit (above kMaxPartBytes),
// kDamaged (nothing libxml2 can parse), kNoTextLayer (no text). Element
// nesting beyond kMaxXmlDepth is not read. `name` is used in messages.
StatusOr<Document> HtmlToDocument(const std::string& bytes, const std::string& name);

}  // namespace ellm::ingest::office

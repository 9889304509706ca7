// A heading tree from the page layout, for PDFs that carry no outline of
// their own: lines set apart from the body by their font. Pure; no PDF
// types (the layout stage gives each line its font size and weight).
#pragma once

#include <vector>

#include "ellm/ingest/document.h"
#include "text/text_line.h"

namespace ellm::ingest::text {

// The headings of `pages` (page i is Page::number i + 1), in document order.
// The body font is the size (to half a point) that sets the most
// characters of running text. A heading is a line standing alone (its own
// paragraph, the next line a new one too), not a table row, of 1 to 16
// words and at most 120 bytes, holding a letter, not ending a sentence
// (".", ",", ";"), starting with a capital letter or a number, and set
// either at least 15% larger than the body or in bold at the body's size
// (when the body itself is not bold). Levels come from the styles found,
// largest first, bold before regular at one size: at most four. A style
// used for more than a third of the document's lines is not a heading
// style, nor one found only on the first page of a document of three pages
// or more (its title page). Numbered headings of one depth ("2.1", "7.3")
// share the level most of them have. Running headers and footers are
// removed before this reads them.
// At most kMaxLayoutHeadings headings.
inline constexpr size_t kMaxLayoutHeadings = 2000;
std::vector<Heading> HeadingsFromLayout(const std::vector<PageLines>& pages);

}  // namespace ellm::ingest::text

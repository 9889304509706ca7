// TextLine: one line of a page in reading order, as the layout stage hands
// it to text post-processing (ingest/text/). Pure data; no PDF types.
#pragma once

#include <string>
#include <vector>

namespace ellm::ingest::text {

// How a line relates to the line before it in reading order.
// Append-only (the layout tests name these).
enum class LineBreak {
  kNone,       // continues the same paragraph
  kParagraph,  // a new paragraph: vertical gap, indent or font change
  kBlock,      // a jump in the layout (next column, deferred footnote): a new
               // paragraph unless the sentence visibly continues
};

struct TextLine {
  std::string text;  // UTF-8; a table row has its cells joined by " | "
  LineBreak break_before = LineBreak::kNone;
  bool table_row = false;
  double font_size = 0;  // of the line's longest run of words, in points; 0: unknown
  bool bold = false;     // every word of that run is bold
};

using PageLines = std::vector<TextLine>;

}  // namespace ellm::ingest::text

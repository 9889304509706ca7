// Reading order from word boxes: the geometry half of PDF -> text, with no
// poppler types so it can be tested on synthetic pages.
//
// 1. Words -> lines (vertical overlap) -> segments (a line split at gaps
//    wider than about one text height).
// 2. Tables: runs of >= 2 consecutive lines with >= 3 aligned segments of
//    short cells (or 2 when the last cell is a figure) become rows whose
//    cells are joined by " | "; a table is kept whole.
// 3. Recursive XY-cut over segments and tables: a region is cut at its
//    widest whitespace gap, horizontal or vertical, so columns are read one
//    after the other, top to bottom, and full-width blocks stay in place.
// 4. Text in a font clearly smaller than the page's body font (footnotes,
//    sidebars, running headers) is moved after the body, so it never splits
//    a sentence.
// 5. Each line is labelled with how it follows the previous one (same
//    paragraph, new paragraph, jump to another block).
#pragma once

#include <string>
#include <vector>

#include "text/text_line.h"

namespace ellm::ingest::pdf {

// One word box. Coordinates in points, origin at the page's top-left, y
// growing downwards: x0 < x1, y0 < y1.
struct Word {
  std::string text;  // UTF-8, already normalised
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool space_after = false;  // the PDF has a space (or a gap) after this word
  bool horizontal = true;    // false for rotated or vertical text
  double font_size = 0;      // points (or the box height, which scales with it); 0: unknown
  bool bold = false;         // its font is a bold (black, heavy, semibold) face, when known
};

// Words in the order the PDF gives them (any order) -> lines in reading
// order. Non-horizontal words are appended at the end in their given order.
// Words with empty text or non-finite or inverted boxes are ignored.
std::vector<text::TextLine> LayoutPage(std::vector<Word> words);

}  // namespace ellm::ingest::pdf

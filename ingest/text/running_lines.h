// Running headers, running footers and page numbers: lines that repeat at the
// top or bottom of many pages. Found by repetition across pages, not by
// fixed margins: a line is running if, with its digits masked ("Page 3 of
// 12" -> "page # of #"), it appears among the first or last few lines of
// enough pages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/text_line.h"

namespace ellm::ingest::text {

struct RunningLineOptions {
  // How many lines at each end of a page may be running lines. The layout
  // stage moves small-font lines (headers, footers) to a page's end, so
  // both ends are searched.
  int edge_lines = 3;
  // A line is running if its masked form is at an edge of at least
  // max(min_pages, ceil(min_fraction * pages with text)) pages. 0.4 lets
  // headers that alternate between odd and even pages qualify.
  int min_pages = 2;
  double min_fraction = 0.4;
};

// The masked form used for comparison: ASCII lower-case, runs of digits
// (and lone roman numerals) replaced by '#', whitespace collapsed.
std::string RepetitionKey(std::string_view line);

// Removes running lines from every page in place. Table rows are never
// removed. Returns how many lines were removed.
int RemoveRunningLines(std::vector<PageLines>* pages, const RunningLineOptions& options = {});

}  // namespace ellm::ingest::text

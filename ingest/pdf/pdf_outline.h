// The PDF's own outline (its bookmarks): title, level and page of every
// entry, through poppler's core API (libpoppler-private-dev: poppler-cpp's
// table of contents has no pages). The only file that includes poppler's
// core headers; used only by the ellm-extract child.
#pragma once

#include <string>
#include <vector>

namespace ellm::ingest::pdf {

struct OutlineEntry {
  int level = 1;      // 1 = a top-level bookmark
  std::string title;  // UTF-8, NFC, one line
  int page = 0;       // 1-based; 0 when its destination names no page
};

// Bounds on what a hostile outline may make us walk.
inline constexpr int kMaxOutlineDepth = 9;
inline constexpr size_t kMaxOutlineEntries = 5000;

// The outline of the PDF in `bytes` (which must stay alive during the
// call), in document order, depth first; empty when it has none or poppler
// cannot read it. Entries deeper than kMaxOutlineDepth are left out; the
// walk stops after kMaxOutlineEntries.
std::vector<OutlineEntry> ReadPdfOutline(const std::string& bytes);

}  // namespace ellm::ingest::pdf

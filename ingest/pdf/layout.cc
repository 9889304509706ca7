// Reading order from word boxes (see layout.h for the steps).
#include "pdf/layout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <tuple>

namespace ellm::ingest::pdf {
namespace {

using text::LineBreak;
using text::TextLine;

// Gaps are measured in units of the text height h (a word box's height,
// about 1.2x the font size): word spaces are ~0.25h, justified spaces
// rarely exceed 0.8h, column gutters and table gaps are >= 1h.
constexpr double kSegmentGap = 1.0;    // split a line into segments above this
constexpr double kSpaceGap = 0.2;      // a gap this wide is a space even if unmarked
constexpr double kMinGutter = 0.5;     // narrower x gaps are not cuts
constexpr double kParagraphGap = 0.5;  // a vertical gap this wide starts a paragraph
constexpr double kSmallFont = 0.85;    // "clearly smaller" than the body font
constexpr int kMaxCutDepth = 48;       // XY-cut recursion bound (hostile pages)
constexpr double kColumnGap = 0.35;    // a strip this wide, empty in every row, cuts columns
constexpr size_t kMaxColumns = 31;     // cuts of one table at most
constexpr size_t kMaxJoinedRows = 64;  // rows joining a table by its columns alone

struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  double Height() const { return y1 - y0; }
  void Extend(const Box& b) {
    x0 = std::min(x0, b.x0), y0 = std::min(y0, b.y0);
    x1 = std::max(x1, b.x1), y1 = std::max(y1, b.y1);
  }
};

// A run of words on one line with no wide gap, or a whole table.
struct Item {
  Box box;
  double size = 0;  // median text height
  std::string text;
  int words = 0;
  std::vector<std::string> table_rows;  // non-empty: this item is a table
  std::vector<Word> parts;              // a segment's words (a table's columns are cut from them)
};

// A line of output with its geometry, before breaks are decided.
struct OutLine {
  std::string text;
  Box box;
  double size = 0;
  size_t chars = 0;
  bool table_row = false;
  bool deferred = false;
  double font_size = 0;  // of the longest item, from its words
  bool bold = false;
};

Box BoxOf(const Word& w) { return {w.x0, w.y0, w.x1, w.y1}; }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// A segment's font: the median size of its words, bold when all are.
std::pair<double, bool> FontOf(const std::vector<Word>& parts) {
  std::vector<double> sizes;
  bool bold = !parts.empty();
  for (const Word& w : parts) {
    sizes.push_back(w.font_size);
    bold = bold && w.bold;
  }
  return {Median(sizes), bold};
}

double VerticalOverlap(const Box& a, const Box& b) {
  return std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
}

bool SameLine(const Box& a, const Box& b) {
  return VerticalOverlap(a, b) >= 0.5 * std::min(a.Height(), b.Height());
}

// Groups boxes (given by index) into lines: sorted by vertical centre,
// a box joins the current line while it overlaps it by half a height.
template <typename GetBox>
std::vector<std::vector<size_t>> GroupLines(std::vector<size_t> idx, GetBox box_of) {
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const Box &ba = box_of(a), &bb = box_of(b);
    return ba.y0 + ba.y1 < bb.y0 + bb.y1;
  });
  std::vector<std::vector<size_t>> lines;
  Box cur;
  for (size_t i : idx) {
    const Box& b = box_of(i);
    if (!lines.empty() && SameLine(cur, b)) {
      lines.back().push_back(i);
      cur.Extend(b);
    } else {
      lines.push_back({i});
      cur = b;
    }
  }
  for (auto& line : lines) {
    std::stable_sort(line.begin(), line.end(),
                     [&](size_t a, size_t b) { return box_of(a).x0 < box_of(b).x0; });
  }
  return lines;
}

// One line of words -> its segments.
std::vector<Item> SplitSegments(const std::vector<Word>& words, const std::vector<size_t>& line) {
  std::vector<double> heights;
  for (size_t i : line) heights.push_back(words[i].y1 - words[i].y0);
  const double h = std::max(1.0, Median(heights));
  std::vector<Item> segs;
  const Word* prev = nullptr;
  for (size_t i : line) {
    const Word& w = words[i];
    if (prev && w.text == prev->text && std::abs(w.x0 - prev->x0) < 1 &&
        std::abs(w.y0 - prev->y0) < 1) {
      continue;  // the same word drawn twice (simulated bold)
    }
    const double gap = prev ? w.x0 - prev->x1 : 0;
    if (!prev || gap > kSegmentGap * h) {
      segs.push_back({BoxOf(w), h, w.text, 1, {}, {}});
    } else {
      Item& s = segs.back();
      if (prev->space_after || gap > kSpaceGap * h) s.text += ' ';
      s.text += w.text;
      s.box.Extend(BoxOf(w));
      ++s.words;
    }
    segs.back().parts.push_back(w);
    prev = &w;
  }
  return segs;
}

// A table cell holding a figure: digits with at most four letters around
// them (a currency or unit: "EUR 3.4m", "12 kg"), or a placeholder for one
// ("n/a", "-").
bool IsFigure(const std::string& s) {
  if (s == "n/a" || s == "N/A" || s == "-" || s == "\u2013" || s == "\u2014") return true;
  int digits = 0, letters = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      ++digits;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      ++letters;
    } else if (std::string_view("+-.,%()$/ ").find(c) == std::string_view::npos &&
               static_cast<unsigned char>(c) < 0x80) {
      return false;
    }
  }
  return digits > 0 && letters <= 4;
}

bool IsTableRowCandidate(const std::vector<Item>& segs) {
  if (segs.size() >= 3) {
    int words = 0;
    for (const Item& s : segs) words += s.words;
    return words <= 4 * static_cast<int>(segs.size());
  }
  return segs.size() == 2 && segs[0].words <= 6 && IsFigure(segs[1].text);
}

// A table's header row: two cells or more, each a few words (labels
// above the columns; "Item | Budget" is no figure row).
bool IsHeaderCandidate(const std::vector<Item>& segs) {
  if (segs.size() < 2) return false;
  for (const Item& s : segs) {
    if (s.words > 4) return false;
  }
  return true;
}

// Rows a and b have cells in the same columns (all but one cell overlap).
bool Aligned(const std::vector<Item>& a, const std::vector<Item>& b) {
  const std::vector<Item>& small = a.size() <= b.size() ? a : b;
  const std::vector<Item>& big = a.size() <= b.size() ? b : a;
  size_t hits = 0;
  for (const Item& s : small) {
    for (const Item& t : big) {
      if (std::min(s.box.x1, t.box.x1) > std::max(s.box.x0, t.box.x0)) {
        ++hits;
        break;
      }
    }
  }
  return hits >= 2 && hits + 1 >= small.size();
}

// Tightly set columns (LibreOffice's tables) leave no empty strip wide
// enough; their cells still start (left-aligned) or end (right-aligned) at
// one x in most rows. Such an edge, with a space before (after) it in each
// of those rows, adds a cut just outside it, unless a word of some row
// crosses it. `spans`: every word's [x0, x1], sorted. Cuts stay sorted.
void AlignedEdgeCuts(const std::vector<std::vector<Item>>& lines, size_t i, size_t j, double h,
                     const std::vector<std::pair<double, double>>& spans,
                     std::vector<double>* cuts) {
  std::vector<double> starts, ends;  // word edges after (before) a space, within a row
  for (size_t r = i; r <= j; ++r) {
    const Word* prev = nullptr;
    for (const Item& seg : lines[r]) {
      for (const Word& w : seg.parts) {
        if (prev != nullptr && w.x0 - prev->x1 > kSpaceGap * h * 0.5) {
          starts.push_back(w.x0);
          ends.push_back(prev->x1);
        }
        prev = &w;
      }
    }
  }
  const size_t rows = j - i + 1;
  const size_t need = std::max<size_t>(2, (rows * 3 + 4) / 5);  // 60% of the rows
  auto crossed = [&](double x) {
    for (const auto& [lo, hi] : spans) {
      if (lo < x && x < hi) return true;
    }
    return false;
  };
  auto add = [&](std::vector<double> edges, double outside) {
    std::sort(edges.begin(), edges.end());
    for (size_t a = 0; a < edges.size();) {
      size_t b = a;
      while (b + 1 < edges.size() && edges[b + 1] - edges[a] < 1.5) ++b;
      const double cut = edges[a] + outside;
      const bool near = std::any_of(cuts->begin(), cuts->end(),
                                    [&](double c) { return std::abs(c - cut) < 0.5 * h; });
      // Bounded: a hostile page of aligned words gets no more than a
      // table's worth of candidate cuts (each is checked against every word).
      if (b - a + 1 >= need && !near && cuts->size() < 4 * kMaxColumns && !crossed(cut)) {
        cuts->push_back(cut);
      }
      a = b + 1;
    }
  };
  add(starts, -0.5);
  add(ends, 0.5);
  std::sort(cuts->begin(), cuts->end());
  // A right-aligned column's end and the next one's start both cut the same
  // gutter: of two cuts with no word centre between them, keep one.
  std::vector<double> kept;
  for (double c : *cuts) {
    const double from = kept.empty() ? -1e300 : kept.back();
    const bool word_between = std::any_of(spans.begin(), spans.end(), [&](const auto& sp) {
      const double centre = (sp.first + sp.second) / 2;
      return from < centre && centre < c;
    });
    if (kept.empty() || word_between) kept.push_back(c);
  }
  *cuts = std::move(kept);
}

// The column boundaries of rows i..j of a table: the vertical strips no
// word of any row touches (a gutter is empty in every row, the space inside
// "EUR 54.3m" or "Average price" is not), so columns set closer than a
// segment gap stay apart, and aligned cell edges (AlignedEdgeCuts).
std::vector<double> ColumnCuts(const std::vector<std::vector<Item>>& lines, size_t i, size_t j,
                               double h) {
  std::vector<std::pair<double, double>> spans;
  for (size_t r = i; r <= j; ++r) {
    for (const Item& seg : lines[r]) {
      for (const Word& w : seg.parts) spans.emplace_back(w.x0, w.x1);
    }
  }
  std::sort(spans.begin(), spans.end());
  std::vector<double> cuts;  // column boundaries, left to right
  double reach = spans.empty() ? 0 : spans.front().second;
  for (const auto& [lo, hi] : spans) {
    if (lo - reach > kColumnGap * h) cuts.push_back((lo + reach) / 2);
    reach = std::max(reach, hi);
  }
  AlignedEdgeCuts(lines, i, j, h, spans, &cuts);
  if (cuts.size() > kMaxColumns) cuts.resize(kMaxColumns);
  return cuts;
}

// One row's cells: each word in the column holding its centre.
std::vector<std::string> RowCells(const std::vector<Item>& line, const std::vector<double>& cuts) {
  std::vector<std::string> cells(cuts.size() + 1);
  for (const Item& seg : line) {
    for (const Word& w : seg.parts) {
      const double centre = (w.x0 + w.x1) / 2;
      const size_t c =
          static_cast<size_t>(std::upper_bound(cuts.begin(), cuts.end(), centre) - cuts.begin());
      if (!cells[c].empty()) cells[c] += ' ';
      cells[c] += w.text;
    }
  }
  return cells;
}

// Whether a line next to a table is one more of its rows although its
// cells were set too close to split it into segments: within the table's
// width, no word across a column cut, two cells or more, a few words each.
bool FitsColumns(const std::vector<Item>& line, const std::vector<double>& cuts, const Box& box,
                 double h) {
  int words = 0;
  for (const Item& seg : line) {
    // A wider cell in the last column may reach past the rows found so far.
    if (seg.box.x0 < box.x0 - h || seg.box.x1 > box.x1 + std::max(h, 0.25 * (box.x1 - box.x0))) {
      return false;
    }
    words += seg.words;
    for (const Word& w : seg.parts) {
      for (double c : cuts) {
        if (w.x0 < c && c < w.x1) return false;
      }
    }
  }
  const std::vector<std::string> cells = RowCells(line, cuts);
  const auto filled =
      std::count_if(cells.begin(), cells.end(), [](const auto& c) { return !c.empty(); });
  return filled >= 2 && words <= 4 * static_cast<int>(cells.size());
}

// Rows i..j of a table, their cells joined by " | " (empty cells kept, so
// cells keep their columns).
std::vector<std::string> TableRows(const std::vector<std::vector<Item>>& lines, size_t i, size_t j,
                                   const std::vector<double>& cuts) {
  std::vector<std::string> rows;
  for (size_t r = i; r <= j; ++r) {
    const std::vector<std::string> cells = RowCells(lines[r], cuts);
    std::string row;
    for (size_t c = 0; c < cells.size(); ++c) row += (c == 0 ? "" : " | ") + cells[c];
    rows.push_back(std::move(row));
  }
  return rows;
}

// The item of a table over lines i..j: its box, size and words (rows later).
Item TableItem(const std::vector<std::vector<Item>>& lines, size_t i, size_t j) {
  Item t;
  t.box = lines[i][0].box;
  std::vector<double> sizes;
  for (size_t r = i; r <= j; ++r) {
    for (const Item& cell : lines[r]) {
      t.box.Extend(cell.box);
      sizes.push_back(cell.size);
      t.words += cell.words;
    }
  }
  t.size = Median(sizes);
  return t;
}

// Replaces runs of aligned table-like lines by one table item each and
// returns every item of the page (segments and tables).
std::vector<Item> BuildItems(std::vector<std::vector<Item>> lines) {
  std::vector<Item> items;
  std::vector<size_t> line_items;  // items each line before i was given
  size_t free_from = 0;            // lines before it belong to a table
  size_t i = 0;
  while (i < lines.size()) {
    size_t j = i;
    auto next_row = [&](size_t r) {
      return r + 1 < lines.size() && IsTableRowCandidate(lines[r + 1]) &&
             Aligned(lines[r], lines[r + 1]) &&
             lines[r + 1][0].box.y0 - lines[r][0].box.y1 < 2.5 * lines[r][0].size;
    };
    if (IsTableRowCandidate(lines[i]) || (IsHeaderCandidate(lines[i]) && next_row(i))) {
      while (next_row(j)) ++j;
    }
    const size_t rows = j - i + 1;
    const bool table = rows >= 3 || (rows == 2 && lines[i].size() >= 3);
    if (!table) {
      line_items.push_back(lines[i].size());
      // Copied: a table found below may take the line back (its words).
      for (const Item& s : lines[i]) items.push_back(s);
      ++i;
      continue;
    }
    Item t = TableItem(lines, i, j);
    std::vector<double> cuts = ColumnCuts(lines, i, j, t.size);
    // Rows set too tightly to be found by their gaps, above and below: a
    // line that keeps the table's columns when it joins them.
    auto joins = [&](size_t r, size_t from, size_t to) {
      if (lines[to][0].box.y0 - lines[from][0].box.y1 >= 2.5 * t.size) return false;
      std::vector<double> with = ColumnCuts(lines, std::min(r, i), std::max(r, j), t.size);
      if (with.size() != cuts.size() || !FitsColumns(lines[r], with, t.box, t.size)) return false;
      cuts = std::move(with);
      return true;
    };
    // At most kMaxJoinedRows rows join a table this way (each join cuts
    // the columns again over the whole table).
    size_t joined = 0;
    while (i > free_from && joined++ < kMaxJoinedRows && joins(i - 1, i - 1, i)) {
      items.resize(items.size() - line_items.back());
      line_items.pop_back();
      --i;
    }
    while (j + 1 < lines.size() && joined++ < kMaxJoinedRows && joins(j + 1, j, j + 1)) ++j;
    t = TableItem(lines, i, j);
    t.table_rows = TableRows(lines, i, j, cuts);
    items.push_back(std::move(t));
    line_items.resize(j + 1, 0);
    line_items[j] = 1;
    i = j + 1;
    free_from = i;
  }
  return items;
}

struct Gap {
  double start = 0, end = 0;
  double Width() const { return end - start; }
};

// The empty intervals between the projections of `idx` on one axis.
std::vector<Gap> Gaps(const std::vector<Item>& items, const std::vector<size_t>& idx, bool x_axis) {
  std::vector<std::pair<double, double>> spans;
  for (size_t i : idx) {
    const Box& b = items[i].box;
    spans.emplace_back(x_axis ? b.x0 : b.y0, x_axis ? b.x1 : b.y1);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<Gap> gaps;
  double reach = spans.front().second;
  for (const auto& [lo, hi] : spans) {
    if (lo > reach) gaps.push_back({reach, lo});
    reach = std::max(reach, hi);
  }
  return gaps;
}

// True if the items left of `x` are row labels rather than a column: short
// (<= 2 words: list numbers, section numbers in a table of contents) and
// each on a line with something right of `x` (two or more, or one when the
// region is a single line). Cutting there would read
// all labels before all rows.
bool IsRowLabelColumn(const std::vector<Item>& items, const std::vector<size_t>& idx, double x) {
  if (idx.size() > 4000) return false;  // quadratic below; such pages are not lists
  int labels = 0;
  for (size_t i : idx) {
    const Item& a = items[i];
    if (a.box.x1 > x) continue;
    if (a.words > 2 || !a.table_rows.empty()) return false;
    const bool has_row = std::any_of(idx.begin(), idx.end(), [&](size_t j) {
      return items[j].box.x0 >= x && VerticalOverlap(a.box, items[j].box) > 0;
    });
    if (!has_row) return false;
    ++labels;
  }
  // One label is enough when the region is a single line ("2.1  Naming").
  const bool one_line = std::all_of(idx.begin(), idx.end(), [&](size_t j) {
    return VerticalOverlap(items[idx[0]].box, items[j].box) > 0;
  });
  return labels >= 2 || (labels == 1 && one_line);
}

// Recursive XY-cut: appends the leaves of `idx` to `leaves` in reading order.
void XyCut(const std::vector<Item>& items, const std::vector<size_t>& idx, double h, int depth,
           std::vector<std::vector<size_t>>* leaves) {
  if (idx.size() <= 1 || depth >= kMaxCutDepth) {
    leaves->push_back(idx);
    return;
  }
  std::vector<Gap> ygaps = Gaps(items, idx, false);
  std::vector<Gap> xgaps = Gaps(items, idx, true);
  std::erase_if(xgaps, [&](const Gap& g) { return g.Width() < kMinGutter * h; });
  if (!xgaps.empty() && IsRowLabelColumn(items, idx, xgaps.front().start)) xgaps.clear();
  double max_y = 0, max_x = 0;
  for (const Gap& g : ygaps) max_y = std::max(max_y, g.Width());
  for (const Gap& g : xgaps) max_x = std::max(max_x, g.Width());
  if (max_x == 0 && max_y == 0) {
    leaves->push_back(idx);
    return;
  }
  // Cut at the widest gap (and any about as wide) only: narrower gaps may
  // be rows that run across columns, and are cut, if at all, further down.
  const bool vertical = max_x > max_y;  // ties: horizontal (keeps bands whole)
  std::vector<Gap>& gaps = vertical ? xgaps : ygaps;
  const double min_width = 0.9 * (vertical ? max_x : max_y);
  std::erase_if(gaps, [&](const Gap& g) { return g.Width() < min_width; });
  // Regions between consecutive cuts, in order (left-right or top-down).
  std::vector<std::vector<size_t>> parts(gaps.size() + 1);
  for (size_t i : idx) {
    const Box& b = items[i].box;
    const double lo = vertical ? b.x0 : b.y0;
    size_t k = 0;
    while (k < gaps.size() && lo >= gaps[k].end) ++k;
    parts[k].push_back(i);
  }
  for (const auto& part : parts) {
    if (!part.empty()) XyCut(items, part, h, depth + 1, leaves);
  }
}

// One leaf -> its lines (segments on the same line joined by a space; a
// table item gives one line per row).
void EmitLeaf(const std::vector<Item>& items, const std::vector<size_t>& leaf,
              std::vector<OutLine>* out) {
  auto lines = GroupLines(leaf, [&](size_t i) -> const Box& { return items[i].box; });
  for (const auto& line : lines) {
    OutLine o;
    o.box = items[line[0]].box;
    size_t longest = 0;  // the line's size is that of its longest item (not a bullet)
    for (size_t i : line) {
      const Item& it = items[i];
      if (!it.table_rows.empty()) {
        for (const std::string& row : it.table_rows) {
          out->push_back({row, it.box, it.size, row.size(), true, false, 0, false});
        }
        continue;
      }
      if (!o.text.empty()) o.text += ' ';
      o.text += it.text;
      o.box.Extend(it.box);
      if (it.text.size() > longest) {
        longest = it.text.size();
        o.size = it.size;
        std::tie(o.font_size, o.bold) = FontOf(it.parts);
      }
    }
    if (o.text.empty()) continue;
    o.chars = o.text.size();
    out->push_back(std::move(o));
  }
}

// Moves lines in a font clearly smaller than the body font (footnotes,
// sidebars) that sit between body lines to after the body. Small lines
// already before or after all body text (headers, footers) stay in place.
void DeferSmallText(std::vector<OutLine>* lines) {
  std::map<long, size_t> chars_by_size;  // text height in half points -> chars
  for (const OutLine& l : *lines) chars_by_size[std::lround(l.size * 2)] += l.chars;
  long body = 0;
  size_t best = 0;
  for (const auto& [size, chars] : chars_by_size) {
    if (chars > best) best = chars, body = size;
  }
  auto small = [&](const OutLine& l) { return !l.table_row && l.size * 2 < kSmallFont * body; };
  auto first_body = std::find_if_not(lines->begin(), lines->end(), small);
  auto last_body = std::find_if_not(lines->rbegin(), lines->rend(), small).base();
  for (auto it = first_body; it < last_body; ++it) it->deferred = small(*it);
  std::stable_partition(lines->begin(), lines->end(), [](const OutLine& l) { return !l.deferred; });
}

// "• item", "- item", "1. item", "(a) item".
bool StartsListItem(const std::string& line) {
  static constexpr std::string_view kBullets[] = {"\xE2\x80\xA2 ", "- ", "* ", "\xE2\x80\x93 ",
                                                  "\xC2\xB7 "};
  for (std::string_view b : kBullets) {
    if (line.rfind(b, 0) == 0) return true;
  }
  size_t i = 0;
  const bool paren = !line.empty() && line[0] == '(';
  i += paren;
  const size_t start = i;
  while (i < line.size() && i - start < 3 && std::isalnum(static_cast<unsigned char>(line[i]))) ++i;
  if (i == start || i + 1 >= line.size() || line[i + 1] != ' ') return false;
  return paren ? line[i] == ')'
               : (line[i] == '.' || line[i] == ')') &&
                     std::isdigit(static_cast<unsigned char>(line[start]));
}

// A line that ends a sentence short of its column's right edge, by more
// than the next line's first word would have needed, was ended by its
// writer: a paragraph break in a layout without space between paragraphs.
bool EndsShort(const OutLine& a, const OutLine& b, double column_right) {
  if (a.text.empty() || b.text.empty() || b.chars == 0) return false;
  if (std::string_view(".:;!?").find(a.text.back()) == std::string_view::npos) return false;
  const unsigned char first = static_cast<unsigned char>(b.text[0]);
  if (!std::isupper(first) && !std::isdigit(first)) return false;
  const size_t word = std::min(b.text.find(' '), b.text.size());
  const double char_width = (b.box.x1 - b.box.x0) / static_cast<double>(b.chars);
  return column_right - a.box.x1 > static_cast<double>(word + 2) * char_width;
}

// The right edge of line i's column: the furthest right edge of the nearby
// lines (within kColumnWindow of it in reading order) that overlap it
// horizontally. Bounded work per line, whatever the page holds.
double ColumnRight(const std::vector<OutLine>& lines, size_t i) {
  constexpr size_t kColumnWindow = 24;
  double right = lines[i].box.x1;
  const size_t lo = i > kColumnWindow ? i - kColumnWindow : 0;
  const size_t hi = std::min(lines.size(), i + kColumnWindow + 1);
  for (size_t j = lo; j < hi; ++j) {
    const Box& b = lines[j].box;
    if (!lines[j].table_row && std::min(b.x1, lines[i].box.x1) > std::max(b.x0, lines[i].box.x0)) {
      right = std::max(right, b.x1);
    }
  }
  return right;
}

LineBreak BreakBetween(const OutLine& a, const OutLine& b, double column_right) {
  if (a.table_row || b.table_row) return LineBreak::kParagraph;
  if (a.deferred != b.deferred) return LineBreak::kBlock;
  const bool below = b.box.y0 >= a.box.y0 + 0.5 * a.box.Height();
  const bool overlaps_x = std::min(a.box.x1, b.box.x1) > std::max(a.box.x0, b.box.x0);
  if (!below || !overlaps_x) return LineBreak::kBlock;
  const double h = std::max(a.size, b.size);
  if (std::abs(a.size - b.size) > 0.15 * h) return LineBreak::kParagraph;
  if (b.box.y0 - a.box.y1 > kParagraphGap * h) return LineBreak::kParagraph;
  if (StartsListItem(b.text)) return LineBreak::kParagraph;
  // An indented first line starts a paragraph; an indent after a list
  // item's first line is its hanging indent.
  if (b.box.x0 - a.box.x0 > 1.0 * h && !StartsListItem(a.text)) return LineBreak::kParagraph;
  if (EndsShort(a, b, column_right)) return LineBreak::kParagraph;
  return LineBreak::kNone;
}

bool ValidWord(const Word& w) {
  return !w.text.empty() && std::isfinite(w.x0) && std::isfinite(w.x1) && std::isfinite(w.y0) &&
         std::isfinite(w.y1) && w.x1 >= w.x0 && w.y1 > w.y0;
}

}  // namespace

std::vector<TextLine> LayoutPage(std::vector<Word> words) {
  std::vector<Word> rotated;
  std::vector<Word> flat;
  for (Word& w : words) {
    if (!ValidWord(w)) continue;
    (w.horizontal ? flat : rotated).push_back(std::move(w));
  }
  std::vector<size_t> idx(flat.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto word_lines = GroupLines(idx, [&](size_t i) { return BoxOf(flat[i]); });
  std::vector<std::vector<Item>> seg_lines;
  std::vector<double> heights;
  for (const auto& line : word_lines) {
    seg_lines.push_back(SplitSegments(flat, line));
    for (const Item& s : seg_lines.back()) heights.push_back(s.size);
  }
  std::vector<Item> items = BuildItems(std::move(seg_lines));
  std::vector<OutLine> out;
  if (!items.empty()) {
    std::vector<size_t> all(items.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<std::vector<size_t>> leaves;
    XyCut(items, all, std::max(1.0, Median(heights)), 0, &leaves);
    for (const auto& leaf : leaves) EmitLeaf(items, leaf, &out);
    DeferSmallText(&out);
  }
  std::vector<TextLine> result;
  for (size_t i = 0; i < out.size(); ++i) {
    const LineBreak br =
        i == 0 ? LineBreak::kBlock : BreakBetween(out[i - 1], out[i], ColumnRight(out, i - 1));
    // Copied: out[i] is read next round.
    result.push_back({out[i].text, br, out[i].table_row, out[i].font_size, out[i].bold});
  }
  // Rotated and vertical text: one line per run, after the page body.
  for (size_t i = 0; i < rotated.size(); ++i) {
    std::string line = rotated[i].text;
    while (i + 1 < rotated.size() && rotated[i].space_after) line += ' ' + rotated[++i].text;
    result.push_back({std::move(line), LineBreak::kBlock, false});
  }
  return result;
}

}  // namespace ellm::ingest::pdf

#include "text/layout_headings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>

#include "text/headings.h"

namespace ellm::ingest::text {
namespace {

constexpr double kLarger = 1.15;  // a heading at least this much larger than the body
constexpr size_t kMaxWords = 16;  // a heading line at most
constexpr size_t kMaxBytes = 120;
constexpr size_t kMaxLevels = 4;

// A font style, the size in half points.
struct Style {
  long half_points = 0;
  bool bold = false;
  bool operator<(const Style& o) const {
    return half_points != o.half_points ? half_points > o.half_points : bold > o.bold;
  }
};

Style StyleOf(const TextLine& l) { return {std::lround(l.font_size * 2), l.bold}; }

size_t Words(const std::string& s) {
  size_t n = 0;
  bool in = false;
  for (char c : s) {
    const bool space = c == ' ';
    n += !space && !in;
    in = !space;
  }
  return n;
}

bool LooksLikeHeading(const std::string& t) {
  if (t.size() < 2 || t.size() > kMaxBytes || Words(t) > kMaxWords) return false;
  // A contents line ("Imports . . . . 7"), not the heading itself.
  if (t.find(". . .") != std::string::npos || t.find("....") != std::string::npos) return false;
  const unsigned char first = static_cast<unsigned char>(t[0]);
  if (!(std::isupper(first) || std::isdigit(first) || first >= 0x80)) return false;
  const char last = t.back();
  if (last == '.' || last == ',' || last == ';') {
    // "1." alone or "Chapter 2." end with a number's period; a sentence does not.
    const size_t sp = t.rfind(' ');
    const std::string tail = t.substr(sp == std::string::npos ? 0 : sp + 1);
    if (last != '.' || tail.find_first_not_of("0123456789.") != std::string::npos) return false;
  }
  return std::any_of(t.begin(), t.end(), [](unsigned char c) { return std::isalpha(c); });
}

// The body font: the style setting the most characters of running text.
Style BodyStyle(const std::vector<PageLines>& pages) {
  std::map<Style, size_t> chars;
  for (const PageLines& page : pages) {
    for (const TextLine& l : page) {
      if (!l.table_row && l.font_size > 0) chars[StyleOf(l)] += l.text.size();
    }
  }
  Style body;
  size_t most = 0;
  for (const auto& [style, n] : chars) {
    if (n > most) most = n, body = style;
  }
  return body;
}

bool Standalone(const PageLines& page, size_t i) {
  const bool starts = i == 0 || page[i].break_before != LineBreak::kNone;
  const bool ends = i + 1 == page.size() || page[i + 1].break_before != LineBreak::kNone;
  return starts && ends;
}

// "2.1": two parts; "A", "IV", "": the style decides.
size_t NumberDepth(const std::string& number) {
  if (number.empty() || !std::isdigit(static_cast<unsigned char>(number[0]))) return 0;
  return 1 + static_cast<size_t>(std::count(number.begin(), number.end(), '.'));
}

// Numbered headings of one depth ("2.1", "7.3") are one level: the level
// most of them got from their style (a section title set partly in code
// font is not a level deeper than its siblings).
void LevelsFromNumbers(std::vector<Heading>* headings) {
  std::map<size_t, std::map<int, size_t>> votes;  // depth -> level -> headings
  for (const Heading& h : *headings) {
    if (const size_t d = NumberDepth(h.number)) ++votes[d][h.level];
  }
  for (Heading& h : *headings) {
    const size_t d = NumberDepth(h.number);
    if (d == 0) continue;
    const auto& v = votes[d];
    h.level = std::max_element(v.begin(), v.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
              })->first;
  }
  // The levels left, renumbered 1, 2, ... in order.
  std::map<int, int> rank;
  for (const Heading& h : *headings) rank[h.level] = 0;
  int next = 1;
  for (auto& [level, r] : rank) r = next++;
  for (Heading& h : *headings) h.level = rank[h.level];
}

}  // namespace

std::vector<Heading> HeadingsFromLayout(const std::vector<PageLines>& pages) {
  const Style body = BodyStyle(pages);
  if (body.half_points == 0) return {};
  struct Found {
    Style style;
    int page;
    std::string text;
  };
  std::vector<Found> found;
  std::map<Style, size_t> uses;  // lines per style, headings or not
  size_t lines = 0;
  for (size_t p = 0; p < pages.size(); ++p) {
    for (size_t i = 0; i < pages[p].size(); ++i) {
      const TextLine& l = pages[p][i];
      if (l.table_row || l.font_size <= 0) continue;
      ++lines;
      const Style s = StyleOf(l);
      ++uses[s];
      const bool larger = s.half_points >= std::lround(body.half_points * kLarger);
      const bool bolder = s.bold && !body.bold && s.half_points >= body.half_points - 1;
      if ((larger || bolder) && Standalone(pages[p], i) && LooksLikeHeading(l.text) &&
          found.size() < kMaxLayoutHeadings) {
        found.push_back({s, static_cast<int>(p + 1), l.text});
      }
    }
  }
  // Heading styles, largest first; one used for a third of all lines is body
  // text, and one found only on the first page of a longer document sets
  // its title page (the title, decorative letters), not a level.
  std::map<Style, size_t> level;
  std::map<Style, int> last_page;
  for (const Found& f : found) {
    level[f.style] = 0;
    last_page[f.style] = std::max(last_page[f.style], f.page);
  }
  size_t next = 1;
  for (auto& [style, lv] : level) {
    if (uses[style] * 3 > lines || next > kMaxLevels) continue;
    if (pages.size() >= 3 && last_page[style] == 1) continue;
    lv = next++;
  }
  std::vector<Heading> out;
  for (const Found& f : found) {
    const size_t lv = level[f.style];
    if (lv == 0) continue;
    auto [number, title] = SplitHeadingNumber(f.text);
    if (title.size() < 2) continue;  // an index's letter ("B")
    out.push_back({static_cast<int>(lv), std::move(number), std::move(title), f.page});
  }
  LevelsFromNumbers(&out);
  return out;
}

}  // namespace ellm::ingest::text

// DocumentOutline from the document's own heading tree (see statements.h).
#include <algorithm>
#include <cctype>
#include <map>

#include "ellm/pipelines/statements.h"

namespace ellm::pipelines {
namespace {

// Where a section starts: a page (index into the pages) and a byte in it.
struct Position {
  size_t page = 0;
  size_t offset = 0;
};

// The level to outline at: the top level with two entries or more, or the
// one below a single root; 0 when neither has two.
int OutlineLevel(const std::vector<ingest::Heading>& headings) {
  std::map<int, int> count;
  for (const ingest::Heading& h : headings) ++count[h.level];
  if (count.empty()) return 0;
  auto top = count.begin();
  if (top->second >= 2) return top->first;
  auto below = std::next(top);
  return below != count.end() && below->second >= 2 ? below->first : 0;
}

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// The start of the line, at or after `from`, whose first 40 bytes hold
// `title` (any case: bookmarks and headings differ in capitals); npos if
// no line does.
size_t FindHeadingLine(const std::string& text, const std::string& title, size_t from) {
  if (title.empty()) return std::string::npos;
  auto it = text.begin() + static_cast<std::ptrdiff_t>(std::min(from, text.size()));
  for (;;) {
    it = std::search(it, text.end(), title.begin(), title.end(),
                     [](char a, char b) { return Lower(a) == Lower(b); });
    if (it == text.end()) return std::string::npos;
    const size_t at = static_cast<size_t>(it - text.begin());
    const size_t line = at == 0 ? 0 : text.rfind('\n', at - 1);
    const size_t line_start = line == std::string::npos || at == 0 ? 0 : line + 1;
    if (at - line_start <= 40 && line_start >= from) return line_start;
    ++it;
  }
}

// The text between two positions, with a "[page N]" line before each
// page's part, and the first and last pages that hold any of it.
std::string Between(const std::vector<Page>& pages, Position a, Position b, OutlineEntry* e) {
  std::string out;
  for (size_t k = a.page; k <= b.page && k < pages.size(); ++k) {
    const std::string& t = pages[k].text;
    const size_t from = k == a.page ? std::min(a.offset, t.size()) : 0;
    const size_t to = k == b.page ? std::min(b.offset, t.size()) : t.size();
    if (to <= from || t.find_first_not_of(" \n", from) >= to) continue;
    out += "[page " + std::to_string(pages[k].number) + "]\n" + t.substr(from, to - from);
    if (out.back() != '\n') out += '\n';
    if (e->first_page == 0) e->first_page = pages[k].number;
    e->last_page = pages[k].number;
  }
  return out;
}

}  // namespace

std::vector<OutlineEntry> DocumentOutline(const std::vector<Page>& pages,
                                          const std::vector<ingest::Heading>& headings) {
  const int level = OutlineLevel(headings);
  if (level == 0 || pages.empty()) return DocumentOutline(pages);
  std::vector<std::pair<std::string, Position>> starts;
  Position at;
  for (const ingest::Heading& h : headings) {
    if (h.level != level) continue;
    auto page =
        std::find_if(pages.begin(), pages.end(), [&](const Page& p) { return p.number == h.page; });
    if (page == pages.end()) continue;
    Position p{static_cast<size_t>(page - pages.begin()), 0};
    if (p.page < at.page) p = at;  // a bookmark out of page order starts here
    const size_t from = p.page == at.page ? at.offset : 0;
    const size_t line = FindHeadingLine(pages[p.page].text, h.title, from);
    p.offset = line == std::string::npos ? from : line;
    at = p;
    starts.push_back({h.number.empty() ? h.title : h.number + " " + h.title, p});
  }
  if (starts.size() > kMaxOutlineSections) starts.resize(kMaxOutlineSections);
  const Position end{pages.size() - 1, pages.back().text.size()};
  std::vector<OutlineEntry> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    OutlineEntry e;
    e.heading = starts[i].first;
    e.text =
        Between(pages, starts[i].second, i + 1 < starts.size() ? starts[i + 1].second : end, &e);
    if (!e.text.empty()) out.push_back(std::move(e));
  }
  if (out.size() < 2) return DocumentOutline(pages);
  return out;
}

}  // namespace ellm::pipelines

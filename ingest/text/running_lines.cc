// Running header/footer removal by cross-page repetition (see running_lines.h).
#include "text/running_lines.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace ellm::ingest::text {
namespace {

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

bool IsRomanNumeral(std::string_view w) {
  if (w.empty() || w.size() > 6) return false;
  return std::all_of(w.begin(), w.end(), [](char c) {
    return c == 'i' || c == 'v' || c == 'x' || c == 'l' || c == 'c';
  });
}

// The indices of a page's edge lines (first and last `n`, no table rows).
std::vector<size_t> EdgeLines(const PageLines& page, int n) {
  std::vector<size_t> out;
  const size_t size = page.size();
  for (size_t i = 0; i < size; ++i) {
    const bool edge = i < static_cast<size_t>(n) || i + n >= size;
    if (edge && !page[i].table_row) out.push_back(i);
  }
  return out;
}

}  // namespace

std::string RepetitionKey(std::string_view line) {
  std::string out;
  std::string word;
  auto flush = [&] {
    if (word.empty()) return;
    if (!out.empty()) out += ' ';
    out += IsRomanNumeral(word) ? "#" : word;
    word.clear();
  };
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == ' ' || c == '\t') {
      flush();
    } else if (IsAsciiDigit(c)) {
      if (word.empty() || word.back() != '#') word += '#';
    } else {
      word += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }
  flush();
  return out;
}

int RemoveRunningLines(std::vector<PageLines>* pages, const RunningLineOptions& options) {
  int pages_with_text = 0;
  std::unordered_map<std::string, int> page_count;  // key -> pages with it at an edge
  std::vector<std::vector<std::pair<size_t, std::string>>> edges(pages->size());
  for (size_t p = 0; p < pages->size(); ++p) {
    const PageLines& page = (*pages)[p];
    if (page.empty()) continue;
    ++pages_with_text;
    std::unordered_set<std::string> seen;
    for (size_t i : EdgeLines(page, options.edge_lines)) {
      std::string key = RepetitionKey(page[i].text);
      if (key.empty()) continue;
      if (seen.insert(key).second) ++page_count[key];
      edges[p].emplace_back(i, std::move(key));
    }
  }
  const int threshold =
      std::max(options.min_pages,
               static_cast<int>(std::ceil(options.min_fraction * pages_with_text - 1e-9)));
  int removed = 0;
  for (size_t p = 0; p < pages->size(); ++p) {
    PageLines& page = (*pages)[p];
    std::vector<bool> drop(page.size(), false);
    for (const auto& [i, key] : edges[p]) drop[i] = page_count[key] >= threshold;
    PageLines kept;
    for (size_t i = 0; i < page.size(); ++i) {
      if (drop[i]) {
        ++removed;
        // The line after a removed one starts a new block: never glue the
        // text around a removed header together.
        if (i + 1 < page.size() && page[i + 1].break_before == LineBreak::kNone) {
          page[i + 1].break_before = LineBreak::kBlock;
        }
      } else {
        kept.push_back(std::move(page[i]));
      }
    }
    page = std::move(kept);
  }
  return removed;
}

}  // namespace ellm::ingest::text

// SplitForBudget: page-marked text cut into chunks that fit a token budget
// (map steps, truncation, the outline's section openings), in time linear
// in the text. A chunk grows one paragraph at a time while the whole chunk
// counts within the budget; counting the whole chunk at every step
// tokenized it again for each paragraph, quadratic in the chunk (issue 39:
// on long reports, the bulk of the time spent outside the model). Here a
// paragraph is counted on its own and added to a running total, and the
// chunk is counted whole only where the decision is close.
#include <regex>

#include "ellm/pipelines/pipeline_processor.h"
#include "run/pipeline_internal.h"

namespace ellm::pipelines {
namespace {

using internal::Trim;
using CountFn = std::function<int64_t(const std::string&)>;

// One unit of a chunk: its text when it starts a chunk, and when it follows
// the unit before it in the same chunk (with the separator between them).
struct Unit {
  std::string first;
  std::string joined;
};

// A unit goes in on the estimate (the chunk's last exact count plus the
// units' own counts since) only while the estimate stays this many tokens
// under the budget: the last additions before a cut are counted exactly. A
// join rarely moves a count by more than a token or two (Gemma's newline
// runs are tokens of their own, split out before BPE, so a paragraph join,
// "\n\n", never does; the words of an overlong paragraph can merge).
constexpr int64_t kSlack = 64;

// The chunk that starts at units[begin], and in `*end` the unit after it:
// units are added while the chunk stays within `max_tokens` (the first
// always). `every_step` counts the whole chunk at every addition, as the
// definition says; otherwise a unit is added on the estimate while it is
// kSlack under the budget and adds at most half the room the last exact
// count left (so the exact counts come closer together near the budget, a
// few per chunk). nullopt when a chunk built on estimates counts over the
// budget once whole (a count that grows across joins): the caller builds
// it again with `every_step`. With a count that never falls as text is
// appended, the result is every_step's: a chunk that counts within the
// budget whole had every step within it, and each cut is made on an exact
// count.
std::optional<std::string> Chunk(const std::vector<Unit>& units, size_t begin, int64_t max_tokens,
                                 const CountFn& count, bool every_step, size_t* end) {
  std::string cur = units[begin].first;
  int64_t counted = every_step ? 0 : count(cur);  // the exact count of cur when `added` is 0
  int64_t added = 0;                              // estimated tokens added since
  size_t i = begin + 1;
  for (; i < units.size(); ++i) {
    const std::string& next = units[i].joined;
    if (!every_step) {
      const int64_t tokens = count(next);
      if (counted + added + tokens <= max_tokens - kSlack &&
          2 * (added + tokens) <= max_tokens - counted) {
        cur += next;
        added += tokens;
        continue;
      }
    }
    const int64_t exact = count(cur + next);
    if (exact > max_tokens) break;
    cur += next;
    counted = exact;
    added = 0;
  }
  *end = i;
  if (added > 0 && count(cur) > max_tokens) return std::nullopt;
  return cur;
}

// `units` packed greedily into chunks (see Chunk).
std::vector<std::string> Pack(const std::vector<Unit>& units, int64_t max_tokens,
                              const CountFn& count) {
  std::vector<std::string> chunks;
  for (size_t at = 0, end = 0; at < units.size(); at = end) {
    std::optional<std::string> chunk = Chunk(units, at, max_tokens, count, false, &end);
    if (!chunk) chunk = Chunk(units, at, max_tokens, count, true, &end);
    chunks.push_back(std::move(*chunk));
  }
  return chunks;
}

}  // namespace

std::vector<std::string> SplitForBudget(const std::string& text, int64_t max_tokens,
                                        const CountFn& count) {
  static const std::regex kMarker(R"(^\[page (\d+)\]$)");
  // Paragraphs, each remembering the page it is on.
  std::vector<std::pair<std::string, std::string>> paras;  // (page marker, text)
  std::string marker;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find("\n\n", at);
    std::string p = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() + 1 : end + 2;
    if (Trim(p).empty()) continue;
    size_t nl = p.find('\n');
    std::string first = p.substr(0, nl);
    if (std::regex_match(first, kMarker)) {
      marker = first;
      p = nl == std::string::npos ? "" : p.substr(nl + 1);
      if (Trim(p).empty()) continue;
    }
    // A paragraph too long on its own is cut at line ends, then words.
    if (count(p) > max_tokens) {
      std::vector<Unit> words;
      for (size_t i = 0; i < p.size();) {
        size_t j = p.find_first_of("\n ", i);
        j = j == std::string::npos ? p.size() : j + 1;
        words.push_back({p.substr(i, j - i), p.substr(i, j - i)});
        i = j;
      }
      for (std::string& piece : Pack(words, max_tokens, count)) {
        paras.emplace_back(marker, std::move(piece));
      }
      continue;
    }
    paras.emplace_back(marker, p);
  }
  // A chunk starts with its page's marker; a paragraph on a new page
  // brings the marker along.
  std::vector<Unit> units;
  std::string prev_marker;
  for (const auto& [m, p] : paras) {
    const std::string head = m.empty() || m == prev_marker ? "" : m + "\n";
    units.push_back({(m.empty() ? "" : m + "\n") + p, "\n\n" + head + p});
    prev_marker = m;
  }
  return Pack(units, max_tokens, count);
}

}  // namespace ellm::pipelines

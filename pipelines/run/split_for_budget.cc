// SplitForBudget: page-marked text cut into chunks that fit a token budget
// (map steps, truncation, the outline's section openings), in time linear
// in the text. A chunk grows one paragraph at a time while the whole chunk
// counts within the budget; counting the whole chunk at every step
// tokenized it again for each paragraph, quadratic in the chunk (issue 39:
// on long reports, the bulk of the time spent outside the model). Here a
// paragraph is counted on its own and added to a running total, and the
// chunk is counted whole only where the decision is close.
#include <cstdint>
#include <optional>
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

// The chunk that starts at unit `begin` (`at(i)`: unit i, nullptr past the
// last), and in `*end` the unit after it: units are added while the chunk
// stays within `max_tokens` (the first always). `every_step` counts the
// whole chunk at every addition, as the definition says; otherwise a unit
// is added on the estimate while it is kSlack under the budget and adds at
// most half the room the last exact count left (so the exact counts come
// closer together near the budget, a few per chunk). nullopt when a chunk
// built on estimates counts over the budget once whole (a count that grows
// across joins): the caller builds it again with `every_step`. With a
// count that never falls as text is appended, the result is every_step's:
// a chunk that counts within the budget whole had every step within it,
// and each cut is made on an exact count.
template <typename At>
std::optional<std::string> Chunk(At& at, size_t begin, int64_t max_tokens, const CountFn& count,
                                 bool every_step, size_t* end) {
  std::string cur = at(begin)->first;
  int64_t counted = every_step ? 0 : count(cur);  // the exact count of cur when `added` is 0
  int64_t added = 0;                              // estimated tokens added since
  size_t i = begin + 1;
  for (const Unit* u; (u = at(i)) != nullptr; ++i) {
    const std::string& next = u->joined;
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

// The units packed greedily into chunks (see Chunk), at most `max_chunks`.
template <typename At>
std::vector<std::string> Pack(At& at, int64_t max_tokens, const CountFn& count,
                              size_t max_chunks = SIZE_MAX) {
  std::vector<std::string> chunks;
  for (size_t begin = 0, end = 0; chunks.size() < max_chunks && at(begin) != nullptr; begin = end) {
    std::optional<std::string> chunk = Chunk(at, begin, max_tokens, count, false, &end);
    if (!chunk) chunk = Chunk(at, begin, max_tokens, count, true, &end);
    chunks.push_back(std::move(*chunk));
  }
  return chunks;
}

// The units of page-marked text, read as far as they are asked for:
// paragraphs, each remembering its page (a chunk starts with its page's
// "[page N]" marker; a paragraph on a new page brings the marker along),
// and a paragraph too long on its own cut at line ends, then words.
class Paragraphs {
 public:
  Paragraphs(const std::string& text, int64_t max_tokens, const CountFn& count)
      : text_(text), max_tokens_(max_tokens), count_(count) {}

  // Unit i; nullptr past the last.
  const Unit* operator()(size_t i) {
    while (i >= units_.size() && ReadParagraph()) {
    }
    return i < units_.size() ? &units_[i] : nullptr;
  }

 private:
  // Appends the next paragraph's units; false at the end of the text.
  bool ReadParagraph() {
    static const std::regex kMarker(R"(^\[page (\d+)\]$)");
    while (at_ <= text_.size()) {
      const size_t end = text_.find("\n\n", at_);
      std::string p = text_.substr(at_, end == std::string::npos ? std::string::npos : end - at_);
      at_ = end == std::string::npos ? text_.size() + 1 : end + 2;
      if (Trim(p).empty()) continue;
      const size_t nl = p.find('\n');
      if (std::regex_match(p.substr(0, nl), kMarker)) {
        marker_ = p.substr(0, nl);
        p = nl == std::string::npos ? "" : p.substr(nl + 1);
        if (Trim(p).empty()) continue;
      }
      if (count_(p) <= max_tokens_) {
        Add(p);
        return true;
      }
      std::vector<Unit> words;
      for (size_t i = 0; i < p.size();) {
        size_t j = p.find_first_of("\n ", i);
        j = j == std::string::npos ? p.size() : j + 1;
        words.push_back({p.substr(i, j - i), p.substr(i, j - i)});
        i = j;
      }
      auto word = [&](size_t i) { return i < words.size() ? &words[i] : nullptr; };
      for (const std::string& piece : Pack(word, max_tokens_, count_)) Add(piece);
      return true;
    }
    return false;
  }

  void Add(const std::string& p) {
    const std::string head = marker_.empty() || marker_ == prev_marker_ ? "" : marker_ + "\n";
    units_.push_back({(marker_.empty() ? "" : marker_ + "\n") + p, "\n\n" + head + p});
    prev_marker_ = marker_;
  }

  const std::string& text_;
  const int64_t max_tokens_;
  const CountFn& count_;
  std::vector<Unit> units_;
  size_t at_ = 0;
  std::string marker_, prev_marker_;
};

}  // namespace

std::vector<std::string> SplitForBudget(const std::string& text, int64_t max_tokens,
                                        const CountFn& count) {
  Paragraphs units(text, max_tokens, count);
  return Pack(units, max_tokens, count);
}

std::string FirstForBudget(const std::string& text, int64_t max_tokens, const CountFn& count) {
  Paragraphs units(text, max_tokens, count);
  std::vector<std::string> first = Pack(units, max_tokens, count, 1);
  return first.empty() ? std::string() : std::move(first.front());
}

}  // namespace ellm::pipelines

// SplitForBudget against its definition (a chunk takes paragraphs while the
// whole chunk counts within the budget, counted at every step) on generated
// page-marked text, with counts that add up across joins and counts that
// do not; and the work it asks of `count`, which must stay linear in the
// text (counting every step was quadratic: issue 39, item 4).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "ellm/pipelines/pipeline_processor.h"

namespace ellm::pipelines {
namespace {

using CountFn = std::function<int64_t(const std::string&)>;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The definition, as SplitForBudget was first written: the whole chunk
// counted again for every paragraph (and every word of an overlong one).
std::vector<std::string> SplitCountingEveryStep(const std::string& text, int64_t max_tokens,
                                                const CountFn& count) {
  static const std::regex kMarker(R"(^\[page (\d+)\]$)");
  std::vector<std::pair<std::string, std::string>> paras;
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
    if (count(p) > max_tokens) {
      std::string piece;
      size_t i = 0;
      while (i < p.size()) {
        size_t j = p.find_first_of("\n ", i);
        j = j == std::string::npos ? p.size() : j + 1;
        std::string next = piece + p.substr(i, j - i);
        if (!piece.empty() && count(next) > max_tokens) {
          paras.emplace_back(marker, piece);
          piece = p.substr(i, j - i);
        } else {
          piece = std::move(next);
        }
        i = j;
      }
      if (!piece.empty()) paras.emplace_back(marker, piece);
      continue;
    }
    paras.emplace_back(marker, p);
  }
  std::vector<std::string> chunks;
  std::string cur, cur_marker;
  for (const auto& [m, p] : paras) {
    std::string head = m.empty() || m == cur_marker ? "" : m + "\n";
    std::string next = cur.empty() ? (m.empty() ? "" : m + "\n") + p : cur + "\n\n" + head + p;
    if (!cur.empty() && count(next) > max_tokens) {
      chunks.push_back(cur);
      cur = (m.empty() ? "" : m + "\n") + p;
    } else {
      cur = std::move(next);
    }
    cur_marker = m;
  }
  if (!cur.empty()) chunks.push_back(cur);
  return chunks;
}

int64_t Words(const std::string& s) {
  int64_t n = 0;
  bool in = false;
  for (char c : s) {
    const bool space = c == ' ' || c == '\n';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

int64_t Joins(const std::string& s) {
  int64_t n = 0;
  for (size_t at = s.find("\n\n"); at != std::string::npos; at = s.find("\n\n", at + 2)) ++n;
  return n;
}

// Page-marked text: `pages` pages of paragraphs of 1-60 words, now and
// then one of 400 words (longer than the smaller budgets), lines broken
// inside some paragraphs.
std::string Report(int pages, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text;
  int word = 0;
  for (int page = 1; page <= pages; ++page) {
    text += (page > 1 ? "\n\n" : "") + std::string("[page ") + std::to_string(page) + "]\n";
    const int paras = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < paras; ++k) {
      const int words = rng() % 25 == 0 ? 400 : 1 + static_cast<int>(rng() % 60);
      for (int w = 0; w < words; ++w) {
        text += "w" + std::to_string(word++);
        text += w + 1 == words ? "" : (rng() % 15 == 0 ? "\n" : " ");
      }
      if (k + 1 < paras) text += "\n\n";
    }
  }
  return text;
}

void ExpectSameAsCountingEveryStep(const CountFn& count, const char* what) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::string text = Report(40, seed);
    for (int64_t budget : {30, 100, 250, 1000, 4000, 100000}) {
      SCOPED_TRACE(std::string(what) + ", seed " + std::to_string(seed) + ", budget " +
                   std::to_string(budget));
      const std::vector<std::string> want = SplitCountingEveryStep(text, budget, count);
      const std::vector<std::string> got = SplitForBudget(text, budget, count);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "chunk " << i;
    }
  }
}

TEST(SplitForBudget, CutsWhereCountingEveryStepCuts) {
  ExpectSameAsCountingEveryStep(Words, "words");
}

// A count that grows faster than its parts (each join costs more the more
// joins the text holds): chunks grown on the parts' sums are over the
// budget, found so when counted whole, and built again step by step.
TEST(SplitForBudget, CutsWhereCountingEveryStepCutsWhenJoinsAddTokens) {
  ExpectSameAsCountingEveryStep(
      [](const std::string& s) { return Words(s) + Joins(s) * Joins(s) / 4; }, "joins add");
}

// A count that jumps past every budget at the 100th join, far from where
// the parts' sums would cut: only counting the chunk whole finds it.
TEST(SplitForBudget, CutsWhereCountingEveryStepCutsWhenACountJumps) {
  ExpectSameAsCountingEveryStep(
      [](const std::string& s) { return Words(s) + (Joins(s) >= 100 ? 1000000 : 0); }, "jump");
}

// A count under its parts' sum (a text starting with a blank line costs
// more alone than inside another): the estimates run high, and the exact
// counts near the budget decide.
TEST(SplitForBudget, CutsWhereCountingEveryStepCutsWhenJoinsSaveTokens) {
  ExpectSameAsCountingEveryStep(
      [](const std::string& s) { return Words(s) + (s.starts_with("\n\n") ? 7 : 0); },
      "joins save");
}

TEST(SplitForBudget, CountsAboutTheTextsLengthNotOnceAParagraph) {
  const std::string text = Report(400, 7);  // ~1,800 paragraphs, ~60,000 words
  for (int64_t budget : {3072, 32768}) {
    int64_t counted = 0;
    const CountFn count = [&](const std::string& s) {
      counted += static_cast<int64_t>(s.size());
      return Words(s);
    };
    const std::vector<std::string> chunks = SplitForBudget(text, budget, count);
    ASSERT_FALSE(chunks.empty());
    for (const std::string& c : chunks) EXPECT_LE(Words(c), budget);
    // Each paragraph on its own twice (its size, then joined), a chunk
    // whole a few times per halving of the room left: counting the whole
    // chunk per paragraph would be hundreds of times the text.
    EXPECT_LE(counted, 20 * static_cast<int64_t>(text.size())) << "budget " << budget;
  }
}

TEST(FirstForBudget, IsTheFirstPieceAndReadsOnlyAsFarAsItNeeds) {
  const std::string text = Report(400, 9);
  for (int64_t budget : {30, 250, 3072}) {
    int64_t counted = 0;
    const CountFn count = [&](const std::string& s) {
      counted += static_cast<int64_t>(s.size());
      return Words(s);
    };
    const std::string first = FirstForBudget(text, budget, count);
    EXPECT_EQ(first, SplitCountingEveryStep(text, budget, Words).front()) << "budget " << budget;
    // The piece, the paragraph after it and the piece counted whole a few
    // times: nothing like the 400 pages.
    EXPECT_LE(counted, 20 * static_cast<int64_t>(first.size()) + 20000) << "budget " << budget;
  }
  EXPECT_EQ(FirstForBudget("\n\n  \n\n", 10, Words), "");
}

}  // namespace
}  // namespace ellm::pipelines

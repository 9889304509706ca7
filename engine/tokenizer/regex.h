// Regex: a small backtracking matcher for the pre-tokenizer expressions of
// llama.cpp's llm_tokenizer_bpe, matching as its unicode_regex_split_stl does
// with libstdc++'s std::regex (ECMAScript: at a position, alternatives and
// greedy quantifiers are tried in order and the first overall match wins).
//
// The subset those expressions use: literals, escapes \r \n \t \f \v and
// escaped punctuation; classes \s \S \d \D \w \W and \p{N L P M S Lu Ll Lt
// Lm Lo}; brackets [...] / [^...] with ranges; groups (...) and (?:...)
// (nothing is captured); lookaheads (?=...) and (?!...); the anchor $;
// greedy ?, *, +, {n}, {n,}, {n,m}. Anything else is refused at Compile.
//
// The text is matched as llama.cpp presents it to std::regex, one symbol per
// code point (ToSymbols):
//   - kCollapsed, when the expression names a \p{...} class: ASCII stays,
//     every other code point becomes one byte standing for its class (0x0B
//     whitespace, 0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark,
//     0xD5 symbol, 0xD0 anything else), and \p{X} means that byte plus X's
//     ASCII members. So \p{Lu} and \p{Ll} both mean every letter, and [^a-z]
//     accepts every non-ASCII letter, as in llama.cpp. Such an expression
//     must be ASCII.
//   - kCodepoints otherwise: code points, with non-ASCII whitespace as 0x0B.
// \s is U+0009..U+000D and U+0020 (C locale), so it is exactly the
// whitespace class of unicode.h in both alphabets.
//
// Thread safety: immutable after Compile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::tokenizer {

enum class RegexAlphabet { kCollapsed, kCodepoints };

class Regex {
 public:
  // `pattern`: UTF-8. Errors name the pattern and what is unsupported.
  static StatusOr<Regex> Compile(std::string_view pattern);

  RegexAlphabet alphabet() const { return alphabet_; }

  // The end of the highest-priority match starting exactly at `pos` of
  // `text` (symbols in alphabet()), or nullopt. `text` ends where $ matches
  // and lookaheads stop. With `not_null` an empty match does not count.
  // REQUIRES: pos <= text.size().
  std::optional<size_t> MatchAt(std::span<const uint32_t> text, size_t pos, bool not_null) const;

 private:
  enum class Op : uint8_t { kClass, kSplit, kJump, kLookahead, kNegLookahead, kEnd, kMatch };
  struct Inst {
    Op op;
    int32_t x = 0;  // kClass: class index; kSplit/kJump: preferred target
    int32_t y = 0;  // kSplit: other target; lookaheads: instruction after the sub-program
  };
  struct CharSet {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive
    bool negated = false;
    bool Contains(uint32_t c) const;
  };
  class Parser;

  std::optional<size_t> Run(int32_t pc, std::span<const uint32_t> text, size_t pos,
                            bool not_null) const;

  RegexAlphabet alphabet_ = RegexAlphabet::kCodepoints;
  std::vector<Inst> prog_;
  std::vector<CharSet> sets_;
};

// The symbols of `cps` in `alphabet` (see above); flags[i] is
// CodepointFlags(cps[i]). REQUIRES: flags.size() == cps.size().
void ToSymbols(RegexAlphabet alphabet, std::span<const uint32_t> cps,
               std::span<const uint16_t> flags, std::vector<uint32_t>& out);

}  // namespace ellm::tokenizer

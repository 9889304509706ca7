// Each scanner follows its llama.cpp function (unicode_regex_split_custom_*);
// branches carry the alternative of the expression they stand for. A scanner
// looks past the end of its piece as at a code point with no class (flags
// 0), which no class test accepts, as llama.cpp's scanners do.
#include "tokenizer/pre_tokenizer_scanners.h"

#include "tokenizer/unicode.h"

namespace ellm::tokenizer {
namespace {

constexpr uint32_t kPastEnd = 0xFFFFFFFF;

// One piece of text; positions past its end read as class 0.
class Text {
 public:
  Text(std::span<const uint32_t> cps, std::span<const uint16_t> flags) : cps_(cps), flags_(flags) {}
  size_t size() const { return cps_.size(); }
  uint32_t Cp(size_t i) const { return i < cps_.size() ? cps_[i] : kPastEnd; }
  uint16_t Flags(size_t i) const { return i < flags_.size() ? flags_[i] : 0; }
  bool Is(size_t i, uint16_t bits) const { return (Flags(i) & bits) != 0; }
  // A code point of the piece outside `word_classes` (the class
  // [^\s...] of the expression).
  bool IsOther(size_t i, uint16_t word_classes) const {
    return Flags(i) != 0 && !Is(i, word_classes);
  }
  bool IsCrLf(size_t i) const { return Cp(i) == '\r' || Cp(i) == '\n'; }
  // The end of the run of `bits` code points starting at i.
  size_t SkipRun(size_t i, uint16_t bits) const {
    while (Is(i, bits)) ++i;
    return i;
  }

 private:
  std::span<const uint32_t> cps_;
  std::span<const uint16_t> flags_;
};

uint32_t AsciiLower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

// 's|'t|'re|'ve|'m|'ll|'d at `pos`, optionally ignoring case (llama.cpp's
// unicode_tolower; gen_unicode_table.py checks that no non-ASCII letter
// lower-cases to one of these): the end of the match, or 0.
size_t MatchContraction(const Text& t, size_t pos, bool fold_case) {
  if (t.Cp(pos) != '\'' || pos + 1 >= t.size()) return 0;
  auto at = [&](size_t i) { return fold_case ? AsciiLower(t.Cp(i)) : t.Cp(i); };
  const uint32_t c1 = at(pos + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return pos + 2;
  if (pos + 2 >= t.size()) return 0;
  const uint32_t c2 = at(pos + 2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
    return pos + 3;
  }
  return 0;
}

// \s+(?!\S)|\s+ at `pos` (the caller has ruled out the earlier
// alternatives): a run of n > 1 whitespace followed by more text gives its
// first n - 1, leaving the last to prefix the next word. Otherwise one code
// point (nothing matched; llama.cpp's scanners take it alone).
size_t MatchWhitespace(const Text& t, size_t pos) {
  const size_t run_end = t.SkipRun(pos, cpflag::kWhitespace);
  const size_t n = run_end - pos;
  if (n > 1 && run_end < t.size()) return run_end - 1;
  return n > 0 ? run_end : pos + 1;
}

// " ?[^\s<word classes>]+" then, with `crlf`, "[\r\n]*": the end, or 0.
size_t MatchOther(const Text& t, size_t pos, uint16_t word_classes, bool crlf) {
  const size_t first = t.Cp(pos) == ' ' ? pos + 1 : pos;
  if (!t.IsOther(first, word_classes)) return 0;
  size_t end = first;
  while (t.IsOther(end, word_classes)) ++end;
  while (crlf && t.IsCrLf(end)) ++end;
  return end;
}

// \s*[\r\n]+: whitespace up to and including the run's last CR or LF, or 0.
size_t MatchSpaceToNewline(const Text& t, size_t pos) {
  size_t last_crlf_end = 0;
  for (size_t i = pos; t.Is(i, cpflag::kWhitespace); ++i) {
    if (t.IsCrLf(i)) last_crlf_end = i + 1;
  }
  return last_crlf_end;
}

// unicode_regex_split_custom_gpt2:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t NextGpt2(const Text& t, size_t pos) {
  if (size_t end = MatchContraction(t, pos, /*fold_case=*/false)) return end;
  // " ?X+" for X in \p{L}, \p{N}: the optional space joins a run of the
  // class of the code point after it.
  const size_t first = t.Cp(pos) == ' ' ? pos + 1 : pos;
  if (t.Is(first, cpflag::kLetter)) return t.SkipRun(first, cpflag::kLetter);
  if (t.Is(first, cpflag::kNumber)) return t.SkipRun(first, cpflag::kNumber);
  constexpr uint16_t kWords = cpflag::kWhitespace | cpflag::kLetter | cpflag::kNumber;
  if (size_t end = MatchOther(t, pos, kWords, /*crlf=*/false)) return end;
  return MatchWhitespace(t, pos);
}

// unicode_regex_split_custom_llama3 / _qwen2 / _qwen35:
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?<L>+|\p{N}{1,<max_digits>}|
//  ?[^\s<L>\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// where <L> is \p{L} (`letters` = kLetter), or [\p{L}\p{M}] for Qwen3.5.
template <size_t kMaxDigits, uint16_t kLetters>
size_t NextLlama3(const Text& t, size_t pos) {
  if (size_t end = MatchContraction(t, pos, /*fold_case=*/true)) return end;
  // [^\r\n\p{L}\p{N}]?<L>+
  if (!t.IsCrLf(pos) && !t.Is(pos, cpflag::kNumber) &&
      (t.Is(pos, kLetters) || t.Is(pos + 1, kLetters))) {
    return t.SkipRun(pos + 1, kLetters);
  }
  // \p{N}{1,max_digits}
  if (t.Is(pos, cpflag::kNumber)) {
    size_t end = pos;
    while (end - pos < kMaxDigits && t.Is(end, cpflag::kNumber)) ++end;
    return end;
  }
  constexpr uint16_t kWords = cpflag::kWhitespace | kLetters | cpflag::kNumber;
  if (size_t end = MatchOther(t, pos, kWords, /*crlf=*/true)) return end;
  if (size_t end = MatchSpaceToNewline(t, pos)) return end;
  return MatchWhitespace(t, pos);
}

// llama.cpp's unicode_cpt_is_han.
bool IsHan(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0x2CEB0 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0x2F800 && c <= 0x2FA1F);
}

// unicode_regex_split_custom_kimi_k2: [\p{Han}]+ | [^\r\n\p{L}\p{N}]? then
// non-Han letters and an optional contraction | \p{N}{1,3} | the Llama 3 tail.
size_t NextKimiK2(const Text& t, size_t pos) {
  auto non_han_letter = [&](size_t i) { return t.Is(i, cpflag::kLetter) && !IsHan(t.Cp(i)); };
  if (IsHan(t.Cp(pos))) {
    size_t end = pos;
    while (IsHan(t.Cp(end))) ++end;
    return end;
  }
  const bool leading =
      !t.IsCrLf(pos) && !t.Is(pos, cpflag::kLetter | cpflag::kNumber) && non_han_letter(pos + 1);
  if (non_han_letter(pos) || leading) {
    size_t end = pos + 1;
    while (non_han_letter(end)) ++end;
    if (size_t c = MatchContraction(t, end, /*fold_case=*/true)) end = c;
    return end;
  }
  if (t.Is(pos, cpflag::kNumber)) {
    size_t end = pos;
    while (end - pos < 3 && t.Is(end, cpflag::kNumber)) ++end;
    return end;
  }
  constexpr uint16_t kWords = cpflag::kWhitespace | cpflag::kLetter | cpflag::kNumber;
  if (size_t end = MatchOther(t, pos, kWords, /*crlf=*/true)) return end;
  if (size_t end = MatchSpaceToNewline(t, pos)) return end;
  return MatchWhitespace(t, pos);
}

// unicode_regex_split_custom_newlines: [^\n]+|[\n]+
size_t NextNewlineRun(const Text& t, size_t pos) {
  const bool newline = t.Cp(pos) == '\n';
  size_t end = pos;
  while (end < t.size() && (t.Cp(end) == '\n') == newline) ++end;
  return end;
}

template <size_t (*kNext)(const Text&, size_t)>
void ScanWords(std::span<const uint32_t> cps, std::span<const uint16_t> flags,
               std::vector<uint32_t>& lengths) {
  const Text t(cps, flags);
  for (size_t pos = 0; pos < t.size();) {
    const size_t end = kNext(t, pos);
    lengths.push_back(static_cast<uint32_t>(end - pos));
    pos = end;
  }
}

// unicode_regex_split_custom_afmoe: each run of n numbers is cut into n % 3
// leading numbers (if any) and groups of three. As in llama.cpp, the text
// before a run is not a word of its own: it joins the run's first group.
void ScanDigitGroups(std::span<const uint32_t> cps, std::span<const uint16_t> flags,
                     std::vector<uint32_t>& lengths) {
  const Text t(cps, flags);
  size_t prev_end = 0;
  auto cut = [&](size_t end) {
    if (end > prev_end) lengths.push_back(static_cast<uint32_t>(end - prev_end));
    prev_end = end;
  };
  for (size_t pos = 0; pos < t.size();) {
    if (!t.Is(pos, cpflag::kNumber)) {
      ++pos;
      continue;
    }
    const size_t run_end = t.SkipRun(pos, cpflag::kNumber);
    size_t at = pos + (run_end - pos) % 3;
    if (at != pos) cut(at);
    for (; at < run_end; at += 3) cut(at + 3);
    pos = run_end;
  }
  cut(t.size());
}

void ScanGpt2(std::span<const uint32_t> c, std::span<const uint16_t> f, std::vector<uint32_t>& l) {
  ScanWords<NextGpt2>(c, f, l);
}
void ScanLlama3(std::span<const uint32_t> c, std::span<const uint16_t> f,
                std::vector<uint32_t>& l) {
  ScanWords<NextLlama3<3, cpflag::kLetter>>(c, f, l);
}
void ScanQwen2(std::span<const uint32_t> c, std::span<const uint16_t> f, std::vector<uint32_t>& l) {
  ScanWords<NextLlama3<1, cpflag::kLetter>>(c, f, l);
}
void ScanQwen35(std::span<const uint32_t> c, std::span<const uint16_t> f,
                std::vector<uint32_t>& l) {
  ScanWords<NextLlama3<1, cpflag::kLetter | cpflag::kMark>>(c, f, l);
}
void ScanKimiK2(std::span<const uint32_t> c, std::span<const uint16_t> f,
                std::vector<uint32_t>& l) {
  ScanWords<NextKimiK2>(c, f, l);
}
void ScanNewlines(std::span<const uint32_t> c, std::span<const uint16_t> f,
                  std::vector<uint32_t>& l) {
  ScanWords<NextNewlineRun>(c, f, l);
}

struct NamedScanner {
  std::string_view expr;
  Scanner scanner;
};

// The expressions unicode_regex_split_custom recognises, verbatim (so no
// line breaking).
// clang-format off
const NamedScanner kScanners[] = {
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", ScanGpt2},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", ScanLlama3},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", ScanLlama3},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", ScanQwen2},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", ScanQwen35},
    {"\\p{Han}+", ScanKimiK2},
    {"\\p{AFMoE_digits}", ScanDigitGroups},
    {"[^\\n]+|[\\n]+", ScanNewlines},
    {"\\d{1,3}(?=(?:\\d{3})*\\b)", ScanDigitGroups},
};
// clang-format on

}  // namespace

Scanner FindScanner(std::string_view expr) {
  for (const NamedScanner& s : kScanners) {
    if (s.expr == expr) return s.scanner;
  }
  return nullptr;
}

}  // namespace ellm::tokenizer

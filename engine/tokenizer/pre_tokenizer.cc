// The scanners follow the regex alternatives left to right; each branch is
// commented with the alternative it matches. A scanner looks past the end of
// the fragment as at a code point with no class (flags 0), which no class
// test accepts, as llama.cpp's custom scanners do.
#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/unicode.h"

namespace ellm::tokenizer {
namespace {

// tokenizer.ggml.pre values and what llama.cpp's llama_vocab::impl::load sets
// for them, limited to those whose regex is one of ours and whose other flags
// (clean_spaces aside, which only detokenize uses) we implement.
struct NamedSpec {
  std::string_view name;
  PreTokenizerSpec spec;
};
constexpr PreTokenizerSpec kLlama3Spec{PreTokenizer::kLlama3, true, true};
constexpr PreTokenizerSpec kLlama3RegexOnly{PreTokenizer::kLlama3, false, false};
constexpr PreTokenizerSpec kQwen2Spec{PreTokenizer::kQwen2, false, false};
constexpr PreTokenizerSpec kGpt2Spec{PreTokenizer::kGpt2, false, false};
constexpr NamedSpec kNamed[] = {
    {"llama-bpe", kLlama3Spec},
    {"llama3", kLlama3Spec},
    {"llama-v3", kLlama3Spec},
    {"falcon3", kLlama3Spec},
    {"falcon-h1", kLlama3Spec},
    {"pixtral", kLlama3Spec},
    {"midm-2.0", kLlama3Spec},
    {"lfm2", kLlama3Spec},
    {"jina-v5-nano", kLlama3Spec},
    {"dbrx", kLlama3RegexOnly},
    {"smaug-bpe", kLlama3RegexOnly},
    {"qwen2", kQwen2Spec},
    {"deepseek-r1-qwen", kQwen2Spec},
    {"kormo", kQwen2Spec},
    {"f2llmv2", kQwen2Spec},
    {"megrez", kQwen2Spec},
    {"stablelm2", kQwen2Spec},
    {"hunyuan", kQwen2Spec},
    {"solar-open", kQwen2Spec},
    {"grok-2", kQwen2Spec},
    {"gpt-2", kGpt2Spec},
    {"phi-2", kGpt2Spec},
    {"mpt", kGpt2Spec},
    {"olmo", kGpt2Spec},
    {"jais", kGpt2Spec},
    {"trillion", kGpt2Spec},
    {"granite-docling", kGpt2Spec},
    {"gigachat", kGpt2Spec},
    {"a.x-4.0", kGpt2Spec},
    {"mellum", kGpt2Spec},
    {"exaone4", kGpt2Spec},
};

constexpr uint32_t kPastEnd = 0xFFFFFFFF;
constexpr uint16_t kWordClasses = cpflag::kWhitespace | cpflag::kLetter | cpflag::kNumber;

// The fragment being split; positions past its end read as class 0.
class Text {
 public:
  Text(std::span<const uint32_t> cps, std::span<const uint16_t> flags) : cps_(cps), flags_(flags) {}
  size_t size() const { return cps_.size(); }
  uint32_t Cp(size_t i) const { return i < cps_.size() ? cps_[i] : kPastEnd; }
  uint16_t Flags(size_t i) const { return i < flags_.size() ? flags_[i] : 0; }
  bool Is(size_t i, uint16_t bits) const { return (Flags(i) & bits) != 0; }
  // [^\s\p{L}\p{N}]: any code point of the fragment outside those classes.
  bool IsOther(size_t i) const { return Flags(i) != 0 && !Is(i, kWordClasses); }
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

// 's|'t|'re|'ve|'m|'ll|'d at `pos`, optionally ignoring case (the script
// shows that no non-ASCII letter lower-cases to one of these): the end of
// the match, or 0.
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

// The end of the word starting at `pos` under the GPT-2 regex.
size_t NextGpt2(const Text& t, size_t pos) {
  if (size_t end = MatchContraction(t, pos, /*fold_case=*/false)) return end;
  // " ?X+" for X in \p{L}, \p{N}, [^\s\p{L}\p{N}]: the optional space joins
  // a run of the class of the code point after it.
  const size_t first = t.Cp(pos) == ' ' ? pos + 1 : pos;
  if (t.Is(first, cpflag::kLetter)) return t.SkipRun(first, cpflag::kLetter);
  if (t.Is(first, cpflag::kNumber)) return t.SkipRun(first, cpflag::kNumber);
  if (t.IsOther(first)) {
    size_t end = first;
    while (t.IsOther(end)) ++end;
    return end;
  }
  return MatchWhitespace(t, pos);
}

// The end of the word starting at `pos` under the Llama 3 regex, with at most
// `max_digits` digits per number (3 for Llama 3, 1 for Qwen2).
size_t NextLlama3(const Text& t, size_t pos, size_t max_digits) {
  if (size_t end = MatchContraction(t, pos, /*fold_case=*/true)) return end;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!t.IsCrLf(pos) && !t.Is(pos, cpflag::kNumber) &&
      (t.Is(pos, cpflag::kLetter) || t.Is(pos + 1, cpflag::kLetter))) {
    return t.SkipRun(pos + 1, cpflag::kLetter);
  }
  // \p{N}{1,max_digits}
  if (t.Is(pos, cpflag::kNumber)) {
    size_t end = pos;
    while (end - pos < max_digits && t.Is(end, cpflag::kNumber)) ++end;
    return end;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  const size_t first = t.Cp(pos) == ' ' ? pos + 1 : pos;
  if (t.IsOther(first)) {
    size_t end = first;
    while (t.IsOther(end)) ++end;
    while (t.IsCrLf(end)) ++end;
    return end;
  }
  // \s*[\r\n]+: whitespace up to and including the run's last CR or LF.
  size_t last_crlf_end = 0;
  for (size_t i = pos; t.Is(i, cpflag::kWhitespace); ++i) {
    if (t.IsCrLf(i)) last_crlf_end = i + 1;
  }
  if (last_crlf_end != 0) return last_crlf_end;
  return MatchWhitespace(t, pos);
}

}  // namespace

std::optional<PreTokenizerSpec> FindPreTokenizer(std::string_view name) {
  for (const NamedSpec& n : kNamed) {
    if (n.name == name) return n.spec;
  }
  return std::nullopt;
}

std::string SupportedPreTokenizers() {
  std::string out;
  for (const NamedSpec& n : kNamed) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

void SplitWords(PreTokenizer kind, std::span<const uint32_t> cps, std::span<const uint16_t> flags,
                std::vector<uint32_t>& word_lengths) {
  const Text t(cps, flags);
  for (size_t pos = 0; pos < t.size();) {
    size_t end = 0;
    switch (kind) {
      case PreTokenizer::kGpt2:
        end = NextGpt2(t, pos);
        break;
      case PreTokenizer::kLlama3:
        end = NextLlama3(t, pos, 3);
        break;
      case PreTokenizer::kQwen2:
        end = NextLlama3(t, pos, 1);
        break;
    }
    word_lengths.push_back(static_cast<uint32_t>(end - pos));
    pos = end;
  }
}

}  // namespace ellm::tokenizer

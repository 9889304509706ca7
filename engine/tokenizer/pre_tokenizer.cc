// The pipeline of unicode_regex_split: expressions in order over pieces.
#include "tokenizer/pre_tokenizer.h"

#include <utility>

namespace ellm::tokenizer {
namespace {

// One expression over one piece (`text`, in the regex's alphabet), as
// llama.cpp's unicode_regex_split_stl walks std::regex_iterator: the text
// before each match and the match are words (an empty match too); after an
// empty match the next one is first sought non-empty at the same place, then
// from one further on; the rest after the last match is a word.
void SplitByRegex(const Regex& re, std::span<const uint32_t> text, std::vector<uint32_t>& out) {
  const size_t n = text.size();
  auto search = [&](size_t from, size_t& begin, size_t& end) {
    for (size_t p = from; p <= n; ++p) {
      if (auto e = re.MatchAt(text, p, /*not_null=*/false)) {
        begin = p;
        end = *e;
        return true;
      }
    }
    return false;
  };
  size_t done = 0;  // end of the last word written
  size_t begin = 0, end = 0;
  bool found = search(0, begin, end);
  while (found) {
    if (begin > done) out.push_back(static_cast<uint32_t>(begin - done));
    out.push_back(static_cast<uint32_t>(end - begin));
    done = end;
    if (end != begin) {
      found = search(end, begin, end);
    } else if (end == n) {
      found = false;
    } else if (auto e = re.MatchAt(text, end, /*not_null=*/true)) {
      begin = end;
      end = *e;
    } else {
      found = search(end + 1, begin, end);
    }
  }
  if (done < n) out.push_back(static_cast<uint32_t>(n - done));
}

}  // namespace

StatusOr<PreTokenizer> PreTokenizer::Create(std::span<const std::string_view> exprs) {
  PreTokenizer pre;
  for (std::string_view e : exprs) {
    Step step;
    step.scanner = FindScanner(e);
    if (step.scanner == nullptr) {
      auto re = Regex::Compile(e);
      if (!re.ok()) return re.status();
      step.regex = std::move(re).value();
    }
    pre.steps_.push_back(std::move(step));
  }
  return pre;
}

void PreTokenizer::Split(std::span<const uint32_t> cps, std::span<const uint16_t> flags,
                         std::vector<uint32_t>& word_lengths) const {
  std::vector<uint32_t> pieces = {static_cast<uint32_t>(cps.size())}, next;
  // The text in each regex alphabet, made when first needed.
  std::vector<uint32_t> symbols[2];
  bool made[2] = {false, false};
  for (const Step& step : steps_) {
    next.clear();
    std::span<const uint32_t> text;
    if (step.regex) {
      const auto a = static_cast<size_t>(step.regex->alphabet());
      if (!made[a]) ToSymbols(step.regex->alphabet(), cps, flags, symbols[a]);
      made[a] = true;
      text = symbols[a];
    }
    size_t at = 0;
    for (uint32_t len : pieces) {
      if (step.scanner != nullptr) {
        if (len > 0) step.scanner(cps.subspan(at, len), flags.subspan(at, len), next);
      } else {
        SplitByRegex(*step.regex, text.subspan(at, len), next);
      }
      at += len;
    }
    std::swap(pieces, next);
  }
  word_lengths.insert(word_lengths.end(), pieces.begin(), pieces.end());
}

}  // namespace ellm::tokenizer

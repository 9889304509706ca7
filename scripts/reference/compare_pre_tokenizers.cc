// Differential check of our pre-tokenizers against llama.cpp v0.5.0's own
// unicode_regex_split (src/unicode.cpp, compiled in by
// scripts/reference/compare-pre-tokenizers): for every tokenizer.ggml.pre
// name we accept, every string of llama.cpp's ggml-vocab-*.inp files plus
// random strings over letters, marks, digits, CJK, Hangul, punctuation,
// symbols and (non-ASCII) whitespace must be cut into the same words.
// Usage: compare_pre_tokenizers <llama.cpp source dir>. Exit status 1 on a difference.
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_golden.h"
#include "unicode.h"  // llama.cpp's

namespace tok = ellm::tokenizer;

namespace {

std::string Utf8(uint32_t cp) {
  std::string s;
  tok::AppendUtf8(cp, s);
  return s;
}

std::vector<std::string> RandomTexts(size_t n) {
  static constexpr uint32_t kPool[] = {
      'a',    'B',    'z',    'Q',    ' ',    ' ',    ' ',     '\t',   '\n',    '\r',    '\'',
      's',    't',    'l',    'L',    'R',    'e',    'E',     'D',    'm',     '1',     '2',
      '3',    '0',    '9',    '.',    ',',    '!',    '?',     '(',    ')',     '/',     '-',
      '_',    '$',    '+',    '<',    '=',    '^',    '`',     '|',    '~',     '[',     ']',
      '\\',   '{',    '}',    '"',    '#',    '@',    0xA0,    0x85,   0x3000,  0x2003,  0x1680,
      0xE9,   0xC9,   0x301,  0x308,  0x4E2D, 0x6587, 0x3042,  0x30A2, 0xAC00,  0xD55C,  0x3131,
      0x0410, 0x0430, 0x03A9, 0x03C9, 0x0661, 0x00B2, 0x2160,  0x2013, 0x201C,  0x3001,  0x3002,
      0xFF01, 0xFF21, 0x2026, 0x0964, 0x06D4, 0x060C, 0x1F600, 0x20AC, 0x00D7,  0x0E01,  0x0E48,
      0x17C0, 0x0915, 0x093F, 0x094D, 0x200B, 0xFEFF, 0x2028,  0xE000, 0x1D400, 0x10400, 0xFF9F,
      0x2F00, 0x3105, 0xFE30};
  std::mt19937 rng(12345);
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string s;
    for (int k = 0, len = 1 + static_cast<int>(rng() % 30); k < len; ++k) {
      uint32_t c = kPool[rng() % std::size(kPool)];
      if (rng() % 10 == 0) c = 1 + rng() % 0xD7FF;  // any BMP code point below the surrogates
      s += Utf8(c);
    }
    out.push_back(s);
  }
  out.push_back(std::string(600, ' ') + "x" + std::string(300, ' '));
  out.push_back(
      "1234567890123 12 123456 abcDEFghiJKL \xC3\x89"
      "COLE HelloWorld I'M don'T");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <llama.cpp source dir>\n", argv[0]);
    return 2;
  }
  std::vector<std::string> texts = RandomTexts(4000);
  for (const auto& entry : std::filesystem::directory_iterator(std::string(argv[1]) + "/models")) {
    if (entry.path().extension() != ".inp") continue;
    for (std::string& s : ellm::testing::ReadInputs(entry.path().string())) {
      if (!s.empty()) texts.push_back(std::move(s));  // llama.cpp never splits empty text
    }
  }
  int differing = 0;
  for (std::string_view name : tok::PreTokenizerNames()) {
    const auto spec = tok::FindPreTokenizer(name);
    const std::vector<std::string> exprs(spec->exprs.begin(), spec->exprs.end());
    auto pre = tok::PreTokenizer::Create(spec->exprs);
    if (!pre.ok()) {
      std::printf("%s: %s\n", std::string(name).c_str(), pre.status().ToString().c_str());
      ++differing;
      continue;
    }
    int bad = 0;
    for (const std::string& t : texts) {
      const std::vector<std::string> llama = unicode_regex_split(t, exprs, /*byte_encode=*/false);
      std::vector<uint32_t> cps;
      tok::DecodeUtf8(t, cps);
      std::vector<uint16_t> flags(cps.size());
      for (size_t i = 0; i < cps.size(); ++i) flags[i] = tok::CodepointFlags(cps[i]);
      std::vector<uint32_t> lengths;
      pre->Split(cps, flags, lengths);
      std::vector<std::string> ours;
      size_t at = 0;
      for (uint32_t n : lengths) {
        ours.emplace_back();
        for (uint32_t k = 0; k < n; ++k) ours.back() += Utf8(cps[at + k]);
        at += n;
      }
      if (ours == llama) continue;
      if (++bad <= 3) {
        std::printf("%s: %s\n  llama.cpp:", std::string(name).c_str(),
                    ellm::testing::Quoted(t).c_str());
        for (const auto& w : llama) std::printf(" %s", ellm::testing::Quoted(w).c_str());
        std::printf("\n  ours:     ");
        for (const auto& w : ours) std::printf(" %s", ellm::testing::Quoted(w).c_str());
        std::printf("\n");
      }
    }
    if (bad > 0) {
      std::printf("%s (%s): %d of %zu texts differ\n", std::string(name).c_str(),
                  std::string(spec->pre_type).c_str(), bad, texts.size());
      ++differing;
    }
  }
  std::printf("%zu pre-tokenizer names, %zu texts: %d differ\n", tok::PreTokenizerNames().size(),
              texts.size(), differing);
  return differing == 0 ? 0 : 1;
}

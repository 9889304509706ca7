// Pre-tokenizers of byte-level BPE vocabularies: they cut a text fragment into
// words before BPE merges run inside each word, exactly where llama.cpp's
// unicode_regex_split cuts for the tokenizer.ggml.pre types we support.
// Each is a hand-written scanner over code points (no regex engine), one per
// regex llama.cpp uses:
//
//   kGpt2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kLlama3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   kQwen2   as kLlama3 with \p{N} (one digit per word) instead of \p{N}{1,3}
//
// Alternatives are tried in order at each position and the first that
// matches wins (ECMAScript / llama.cpp semantics, not longest match). \s,
// \p{L}, \p{N} are the classes of unicode.h. llama.cpp runs kGpt2 and kLlama3
// through its own scanners (unicode_regex_split_custom_*) and kQwen2 through
// std::regex over a one-byte-per-code-point "collapsed" text; on that text
// the Qwen2 regex matches what the kLlama3 scanner does with one-digit
// numbers (every \s code point is whitespace in both, and ASCII keeps its
// C-locale classes, which agree with the table).
//
// Thread safety: stateless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ellm::tokenizer {

enum class PreTokenizer {
  kGpt2,
  kLlama3,
  kQwen2,
};

// What a tokenizer.ggml.pre value selects in llama.cpp: the splitting rule and
// the flags llama.cpp sets with it.
struct PreTokenizerSpec {
  PreTokenizer kind;
  bool ignore_merges;    // a word that is a whole token is emitted as is (Llama 3)
  bool add_bos_default;  // before tokenizer.ggml.add_bos_token is read
};

// The spec for a tokenizer.ggml.pre value, or nullopt if we do not support it.
std::optional<PreTokenizerSpec> FindPreTokenizer(std::string_view name);
// The supported names, comma-separated, for error messages.
std::string SupportedPreTokenizers();

// Appends to `word_lengths` the length in code points of each word of
// `cps`, in order; the lengths sum to cps.size(). flags[i] is
// CodepointFlags(cps[i]). REQUIRES: flags.size() == cps.size().
void SplitWords(PreTokenizer kind, std::span<const uint32_t> cps, std::span<const uint16_t> flags,
                std::vector<uint32_t>& word_lengths);

}  // namespace ellm::tokenizer

// Pre-tokenizers of BPE vocabularies: they cut a text fragment into words
// before BPE merges run inside each word, exactly where llama.cpp v0.5.0's
// unicode_regex_split cuts for each tokenizer.ggml.pre it accepts.
//
// A pre-tokenizer is data: the list of expressions llama.cpp's
// llm_tokenizer_bpe holds for the pre-type (pre_tokenizer_specs.cc), applied
// in order, each to every piece the previous one left. For one expression
// a piece is cut as llama.cpp cuts it:
//   - by a hand-written scanner where llama.cpp has one for that exact
//     expression (pre_tokenizer_scanners.h);
//   - otherwise by our Regex (regex.h), as llama.cpp's std::regex_iterator
//     loop does: each match is a word, and so is the text between matches.
//     A match may be empty (a word of length 0, which encodes to nothing).
//
// Thread safety: immutable after Create.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "tokenizer/pre_tokenizer_scanners.h"
#include "tokenizer/regex.h"

namespace ellm::tokenizer {

// What a tokenizer.ggml.pre value selects in llama.cpp: the pre-type's
// expressions and flags, and the flags llama_vocab::impl::load sets with the
// name (clean_spaces aside, which only detokenizing uses).
struct PreTokenizerSpec {
  std::string_view pre_type;                // llama.cpp's LLAMA_VOCAB_PRE_TYPE_<pre_type>
  std::span<const std::string_view> exprs;  // applied in order
  bool byte_encode = true;           // false: words stay raw UTF-8, missing bytes are <0xNN> tokens
  bool whole_newline_words = false;  // Gemma 4: a word of only '\n' that is a token stays whole
  bool ignore_merges = false;        // a word that is a whole token is emitted as is
  bool add_bos_default = false;      // before tokenizer.ggml.add_bos_token is read
  bool no_default_bos = false;       // no BOS id unless the file names one (GLM-4)
  bool escape_whitespaces = false;   // ' ' becomes U+2581 before splitting (SPM-style BPE)
  bool merges_optional = false;      // tokenizer.ggml.merges may be absent (Kimi K2)
};

// The spec for a tokenizer.ggml.pre value, or nullopt if llama.cpp refuses it.
std::optional<PreTokenizerSpec> FindPreTokenizer(std::string_view name);
// Every accepted name, in llama.cpp's order.
std::vector<std::string_view> PreTokenizerNames();
// The accepted names, comma-separated, for error messages.
std::string SupportedPreTokenizers();

class PreTokenizer {
 public:
  // Compiles `exprs`; an error names the expression (a bug in our table).
  static StatusOr<PreTokenizer> Create(std::span<const std::string_view> exprs);

  // Appends to `word_lengths` the length in code points of each word of
  // `cps`, in order (some may be 0); the lengths sum to cps.size().
  // flags[i] is CodepointFlags(cps[i]). REQUIRES: flags.size() == cps.size().
  void Split(std::span<const uint32_t> cps, std::span<const uint16_t> flags,
             std::vector<uint32_t>& word_lengths) const;

 private:
  struct Step {
    Scanner scanner = nullptr;   // if set, stands for the expression
    std::optional<Regex> regex;  // otherwise
  };
  std::vector<Step> steps_;
};

}  // namespace ellm::tokenizer

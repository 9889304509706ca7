// SpmTokenizer: the SentencePiece-style tokenizer of GGUF files with
// tokenizer.ggml.model = "llama" (Llama 2, Mistral, Gemma 1-3), as llama.cpp's
// llm_tokenizer_spm and llama_vocab::impl::tokenize / token_to_piece compute
// it:
//   1. special tokens are split out (SpecialTokenSplitter);
//   2. each raw fragment gets a leading space if add_space_prefix and it is
//      the first fragment or follows a special token, then every ' ' becomes
//      U+2581 "▁";
//   3. the fragment starts as one symbol per UTF-8 character; adjacent pairs
//      whose concatenation is a vocabulary token are merged, highest score
//      first (ties: leftmost first), until no pair is a token;
//   4. each final symbol is its token, or else its bytes as <0xNN> tokens.
//
// Limits: a raw fragment (the text between two special tokens) must be under
// 2 GiB; symbols are indexed with int32_t, as in llama.cpp.
//
// Thread safety: immutable after construction; Encode/Decode may run
// concurrently.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/engine/tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_tokenizer.h"

namespace ellm::tokenizer {

class SpmTokenizer final : public VocabTokenizer {
 public:
  explicit SpmTokenizer(std::unique_ptr<const Vocab> vocab);

  std::vector<TokenId> Encode(std::string_view text, bool add_bos,
                              bool parse_special) const override;

 private:
  struct Scratch;
  // Steps 3-4 for one escaped fragment; appends to `out`.
  void EncodeEscaped(std::string_view text, Scratch& scratch, std::vector<TokenId>& out) const;

  SpecialTokenSplitter splitter_;
  // The byte-fallback token of each byte: "<0xNN>", else the one-byte token,
  // else UNK (llama.cpp throws there; no real vocabulary lacks both).
  std::array<TokenId, 256> byte_token_;
};

}  // namespace ellm::tokenizer

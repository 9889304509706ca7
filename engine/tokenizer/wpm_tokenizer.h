// WpmTokenizer: the WordPiece tokenizer of GGUF files with
// tokenizer.ggml.model = "bert" (BERT, bge, MiniLM and other BERT-style
// embedding models), as llama.cpp's llm_tokenizer_wpm_session and
// llama_vocab::impl::tokenize / token_to_piece compute it:
//   1. special tokens are split out (SpecialTokenSplitter, as for SPM);
//   2. each raw fragment is read as code points (invalid UTF-8 becomes
//      U+FFFD) and normalized one code point at a time: with strip_accents,
//      a code point becomes the first code point of its decomposition
//      (unicode.h's NfdFirst, llama.cpp's truncated NFD) and marks (\p{M})
//      are dropped; U+0000, U+FFFD and controls (\p{C}) are dropped; with
//      lowercase, letters are lower-cased (unicode.h's ToLower);
//   3. words end at whitespace, and every punctuation character (\p{P}),
//      ASCII symbol (\p{S} below U+007F) and CJK ideograph is a word of its
//      own (the classes of the code point after step 2's NFD, before
//      lower-casing);
//   4. each word, prefixed with U+2581 "▁", is cut greedily into the longest
//      vocabulary tokens from its start (BERT's "##" continuations are the
//      tokens without "▁"); a word with any position where no token starts
//      becomes one [UNK].
// With add_bos, [CLS] (the BOS id) is prepended and [SEP] appended, whatever
// tokenizer.ggml.add_bos_token and add_sep_token say, as llama.cpp does.
// TokenToPiece writes "▁" as a space; Decode does not undo the spaces
// llama.cpp's detokenize cleans up (clean_spaces) around punctuation.
//
// Where llama.cpp fails instead: a code point above U+10FFFF (from lead
// bytes F5..F7) makes its normalizer throw; here it is dropped like U+FFFD.
//
// Thread safety: immutable after construction; Encode/Decode may run
// concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_tokenizer.h"

namespace ellm::tokenizer {

class WpmTokenizer final : public VocabTokenizer {
 public:
  // BertNormalizer options (tokenizer.ggml.normalizer.*).
  struct Normalizer {
    bool lowercase = true;
    bool strip_accents = true;  // defaults to `lowercase`, as in llama.cpp
  };

  // Reads the vocabulary with llama.cpp's "bert" defaults ([CLS] 101,
  // [SEP] 102, [UNK] 100, add_bos) and the normalizer keys. Errors name the
  // file and the key: a mistyped normalizer key, or a vocabulary without
  // [CLS], [SEP] or [UNK] (llama.cpp would abort on the first two and emit
  // token -1 for the third).
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file);

  std::vector<TokenId> Encode(std::string_view text, bool add_bos,
                              bool parse_special) const override;

 private:
  struct Scratch;

  WpmTokenizer(std::unique_ptr<const Vocab> vocab, Normalizer normalizer);

  // Steps 2-4 for one raw fragment; appends to `out`.
  void EncodeFragment(std::string_view text, Scratch& scratch, std::vector<TokenId>& out) const;
  // Step 4 for one word that starts with "▁" and has at least one more byte.
  void EncodeWord(std::string_view word, std::vector<TokenId>& out) const;

  Normalizer normalizer_;
  SpecialTokenSplitter splitter_;
  size_t max_token_len_ = 0;  // bytes; no longer substring can be a token
};

}  // namespace ellm::tokenizer

// BpeTokenizer: the BPE tokenizer of GGUF files with tokenizer.ggml.model =
// "gpt2" (byte-level BPE: Llama 3, Qwen2, GPT-2 and kin) or "gemma4"
// (SPM-style BPE over raw UTF-8), as llama.cpp's llm_tokenizer_bpe_session
// and llama_vocab::impl::tokenize / token_to_piece compute it:
//   1. special tokens are split out (SpecialTokenSplitter, as for SPM);
//   2. each raw fragment (with spaces written as U+2581 if the pre-tokenizer
//      escapes whitespace) is read as code points (invalid UTF-8 becomes
//      U+FFFD) and cut into words by the pre-tokenizer that
//      tokenizer.ggml.pre names (pre_tokenizer.h);
//   3. each word's UTF-8 bytes are written in the GPT-2 byte alphabet
//      (unicode.h), unless the pre-tokenizer keeps raw UTF-8; with
//      ignore_merges (Llama 3) a word that is a token is emitted whole;
//   4. otherwise the word starts as one symbol per byte (raw: per code
//      point), and the adjacent pair with the lowest merge rank
//      (tokenizer.ggml.merges; ties: leftmost) is merged until no pair has
//      a rank;
//   5. each final symbol is its token, or else for each of its bytes the
//      one-byte token (raw: the <0xNN> token), if any (llama.cpp drops the
//      others).
// TokenToPiece maps byte-level text back to raw bytes (or U+2581 to spaces).
//
// Merge ranks are kept by pair of symbol ids, not strings: every string that
// appears in a merge gets an id (its token id when it is a token), and each
// merge records the id of its result, so the merge loop does no string work.
//
// Limits: a word must be under 2 GiB (symbols are int32_t indices).
//
// Thread safety: immutable after construction; Encode/Decode may run
// concurrently.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_tokenizer.h"

namespace ellm::tokenizer {

class BpeTokenizer final : public VocabTokenizer {
 public:
  // Reads tokenizer.ggml.pre and tokenizer.ggml.merges from `file` besides the
  // vocabulary. Errors name the file, the key and the value: a missing or
  // unsupported pre-tokenizer, missing or mistyped merges.
  // `model` is tokenizer.ggml.model: "gpt2", or "gemma4" (whose pre-tokenizer
  // llama.cpp fixes to "gemma4" whatever the file says).
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file,
                                                       std::string_view model);

  std::vector<TokenId> Encode(std::string_view text, bool add_bos,
                              bool parse_special) const override;

 private:
  struct Merge {
    uint64_t key;  // PairKey(left id, right id); kNoKey: empty slot
    int32_t rank;
    int32_t result;  // symbol id of the merged string, -1 if it has none
  };
  struct Scratch;

  BpeTokenizer(std::unique_ptr<const Vocab> vocab, PreTokenizerSpec spec, PreTokenizer pre);
  // Interns the merge strings and fills merges_; `merges` as in the file.
  void BuildMerges(const std::vector<std::string_view>& merges);
  int32_t SymbolId(std::string_view s) const;  // -1 if s is no token nor merge part
  const Merge* FindMerge(int32_t left, int32_t right) const;

  // Steps 2-5 for one raw fragment; appends to `out`.
  void EncodeFragment(std::string_view text, Scratch& scratch, std::vector<TokenId>& out) const;
  void EncodeWord(std::span<const uint32_t> cps, Scratch& scratch, std::vector<TokenId>& out) const;

  PreTokenizerSpec spec_;
  PreTokenizer pre_;
  SpecialTokenSplitter splitter_;
  // Symbol ids past the vocabulary: merge parts that are not tokens.
  std::unordered_map<std::string, int32_t> extra_symbols_;
  // Open addressing over a power-of-two table keyed on the pair of symbol
  // ids (load <= 3/4). The lowest rank wins for a pair listed twice, as in
  // llama.cpp's bpe_ranks.emplace.
  std::vector<Merge> merges_;
  uint64_t merge_mask_ = 0;
  std::array<int32_t, 256> byte_symbol_;    // symbol id of each byte's one-character text
  std::array<std::string, 256> byte_text_;  // the byte-level text of each byte
  std::array<TokenId, 256> byte_token_;     // the <0xNN> token of each byte, or -1
};

}  // namespace ellm::tokenizer

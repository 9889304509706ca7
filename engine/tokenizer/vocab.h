// Vocab: the token table every tokenizer model shares, read from a GGUF file's
// tokenizer.ggml.* keys the way llama.cpp's llama_vocab::impl::load reads it:
// token texts, scores, attributes (from token_type, then the text-based fix-ups
// llama.cpp applies), the special ids, the add_bos / add_eos /
// add_space_prefix flags and the set of end-of-generation tokens. The
// SentencePiece ("llama"), BPE ("gpt2", "gemma4") and WordPiece ("bert")
// tokenizers share it, each with its own defaults.
//
// Thread safety: immutable after LoadVocab; safe to read from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"
#include "ellm/engine/tokenizer.h"

namespace ellm::tokenizer {

// Token attribute bits, as llama.cpp's llama_token_attr (a token may carry
// several, e.g. CONTROL | UNUSED). Held in memory only.
namespace attr {
constexpr uint32_t kUndefined = 0;
constexpr uint32_t kUnknown = 1u << 0;
constexpr uint32_t kUnused = 1u << 1;
constexpr uint32_t kNormal = 1u << 2;
constexpr uint32_t kControl = 1u << 3;
constexpr uint32_t kUserDefined = 1u << 4;
constexpr uint32_t kByte = 1u << 5;
constexpr uint32_t kNormalized = 1u << 6;
constexpr uint32_t kLstrip = 1u << 7;  // strip whitespace left of the token when splitting
constexpr uint32_t kRstrip = 1u << 8;  // ... and right of it
}  // namespace attr

// What a tokenizer model assumes when the file leaves a key out (llama.cpp
// sets these per tokenizer.ggml.model before reading the file's keys).
struct VocabDefaults {
  TokenId bos = -1;
  TokenId eos = -1;
  TokenId unk = -1;
  TokenId sep = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
};

// Token text -> id: open addressing over a power-of-two table, which keeps a
// lookup to one or two cache lines; the tokenizer's inner loop is lookups
// (std::unordered_map spent most of the encode time chasing its nodes).
class TokenIndex {
 public:
  // `text` must outlive the index and not change. Returns the first id whose
  // text repeats an earlier one's, or -1 when all are distinct.
  TokenId Build(const std::vector<std::string>& text);
  TokenId Find(std::string_view s) const;

 private:
  struct Slot {
    uint32_t tag;  // high hash bits, to skip most string compares
    TokenId id;    // -1: empty
  };
  static uint64_t Hash(std::string_view s);

  const std::vector<std::string>* text_ = nullptr;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t max_len_ = 0;  // no token is longer; longer queries miss at once
};

struct Vocab {
  std::string path;  // the GGUF file, for messages
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;  // as stored in the file
  std::vector<uint32_t> attrs;  // attr:: bits after llama.cpp's fix-ups
  TokenIndex index;             // over `text`, which never changes after loading

  TokenId bos = -1, eos = -1, unk = -1, eot = -1, eom = -1;
  TokenId sep = -1;  // BERT's [SEP], which WordPiece appends with add_bos
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::vector<uint8_t> is_eog;  // per token

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  bool Valid(TokenId id) const { return id >= 0 && id < size(); }
  TokenId Find(std::string_view s) const { return index.Find(s); }
  bool Has(TokenId id, uint32_t bits) const { return (attrs[id] & bits) != 0; }
};

// Reads the vocabulary. Errors name the file and the key: a missing or
// mistyped tokenizer.ggml.tokens, scores or token_type arrays whose length
// differs from the token count, token_type values outside llama_token_type,
// special-token ids outside the vocabulary, duplicate token texts, and
// add_bos / add_eos set without the matching token.
//
// Where ellm is stricter than llama.cpp (which warns and carries on), the
// reason is that such a file is broken and its output would not be
// trustworthy: out-of-range special ids and token types, and score or type
// arrays longer than the token list, are errors here.
StatusOr<std::unique_ptr<const Vocab>> LoadVocab(const gguf::GgufFile& file,
                                                 const VocabDefaults& defaults);

}  // namespace ellm::tokenizer

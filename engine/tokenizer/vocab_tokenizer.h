// VocabTokenizer: the part of every tokenizer over a Vocab that does not
// depend on the tokenizer model — sizes, special ids, end of generation,
// token types and pieces (which the subclass renders once, at construction,
// into pieces_ as llama.cpp's token_to_piece with special = true). SPM and
// BPE add only Encode and how pieces are rendered.
//
// Thread safety: immutable after the subclass's constructor.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/engine/tokenizer.h"
#include "tokenizer/vocab.h"

namespace ellm::tokenizer {

class VocabTokenizer : public Tokenizer {
 public:
  std::string TokenToPiece(TokenId id, bool render_special = false) const final {
    if (!vocab_->Valid(id)) return std::string();
    if (!render_special && vocab_->Has(id, attr::kUnknown | attr::kControl)) return std::string();
    return pieces_[id];
  }
  int32_t vocab_size() const final { return vocab_->size(); }
  TokenId bos() const final { return vocab_->bos; }
  TokenId eos() const final { return vocab_->eos; }
  bool add_bos() const final { return vocab_->add_bos; }
  bool IsEndOfGeneration(TokenId id) const final {
    return vocab_->Valid(id) && vocab_->is_eog[id] != 0;
  }
  TokenId Find(std::string_view text) const final { return vocab_->Find(text); }
  TokenType type(TokenId id) const final {
    return vocab_->Valid(id) ? vocab_->type[id] : TokenType::kUndefined;
  }

 protected:
  explicit VocabTokenizer(std::unique_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {}

  std::unique_ptr<const Vocab> vocab_;
  std::vector<std::string> pieces_;  // per token, rendered with render_special = true
};

}  // namespace ellm::tokenizer

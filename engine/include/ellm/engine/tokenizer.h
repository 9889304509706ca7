// Tokenizer: text <-> token ids, as the GGUF file describes the vocabulary
// (tokenizer.ggml.*). Three tokenizer models: SentencePiece-style
// (tokenizer.ggml.model = "llama": Gemma, Llama 2, Mistral), byte-level BPE
// ("gpt2": Llama 3, Qwen2, GPT-2; the pre-tokenizer is tokenizer.ggml.pre)
// and BERT WordPiece ("bert": bge and other embedding vocabularies).
// Output must equal llama.cpp's llama_tokenize / llama_token_to_piece for the
// same file.
//
// Thread safety: immutable after creation; Encode/Decode are const and safe
// from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"

namespace ellm {

using TokenId = int32_t;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type); on-disk, append-only.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  // Reads the vocabulary from `file` (strings are copied; the file may be
  // closed afterwards). Errors name the file and the missing or malformed key.
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file);
  virtual ~Tokenizer() = default;

  // add_bos: prepend BOS when the vocabulary says to (tokenizer.ggml.add_bos_token).
  // parse_special: recognise control tokens such as "<start_of_turn>" written
  // in `text`; when false they are tokenized as plain text. (User-defined
  // tokens are always recognised, as in llama.cpp.)
  virtual std::vector<TokenId> Encode(std::string_view text, bool add_bos,
                                      bool parse_special) const = 0;

  // The text of one token as llama_token_to_piece renders it with
  // special=`render_special` (SPM: byte tokens become their byte, "▁" a
  // space; BPE: byte-level text becomes the raw bytes it stands for).
  virtual std::string TokenToPiece(TokenId id, bool render_special = false) const = 0;
  // Concatenated pieces of `ids`.
  std::string Decode(const std::vector<TokenId>& ids, bool render_special = false) const;

  virtual int32_t vocab_size() const = 0;
  virtual TokenId bos() const = 0;  // -1 if none
  virtual TokenId eos() const = 0;
  virtual bool add_bos() const = 0;
  // End of generation: EOS, and control tokens such as "<end_of_turn>",
  // "<|eot_id|>", "<|im_end|>" (llama.cpp's EOG set).
  virtual bool IsEndOfGeneration(TokenId id) const = 0;
  // The id of the token whose text is exactly `text`, or -1.
  virtual TokenId Find(std::string_view text) const = 0;
  virtual TokenType type(TokenId id) const = 0;
};

}  // namespace ellm

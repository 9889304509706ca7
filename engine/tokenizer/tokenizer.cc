// Tokenizer::FromGguf picks the tokenizer model named by
// tokenizer.ggml.model; each model is one class over the shared Vocab.
// Adding one is a class, a VocabDefaults and a line here.
#include "ellm/engine/tokenizer.h"

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wpm_tokenizer.h"

namespace ellm {

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::GgufFile& file) {
  constexpr std::string_view kModelKey = "tokenizer.ggml.model";
  auto model = file.GetString(kModelKey);
  if (!model.ok()) return model.status();

  if (*model == "llama") {
    // llama.cpp's defaults for SPM vocabularies; the file's keys override them.
    tokenizer::VocabDefaults defaults;
    defaults.bos = 1;
    defaults.eos = 2;
    defaults.unk = 0;
    defaults.add_bos = true;
    defaults.add_eos = false;
    defaults.add_space_prefix = true;
    auto vocab = tokenizer::LoadVocab(file, defaults);
    if (!vocab.ok()) return vocab.status();
    return std::unique_ptr<Tokenizer>(
        std::make_unique<tokenizer::SpmTokenizer>(std::move(vocab).value()));
  }
  if (*model == "gpt2" || *model == "gemma4")
    return tokenizer::BpeTokenizer::FromGguf(file, *model);
  if (*model == "bert") return tokenizer::WpmTokenizer::FromGguf(file);
  return UnimplementedError("GGUF file '" + file.path() + "': key '" + std::string(kModelKey) +
                            "' is '" + std::string(*model) + "'; tokenizer model '" +
                            std::string(*model) +
                            "' is not supported yet (supported: 'llama', SentencePiece-style; "
                            "'gpt2', byte-level BPE; 'gemma4', SPM-style BPE; "
                            "'bert', WordPiece)");
}

std::string Tokenizer::Decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string out;
  for (TokenId id : ids) out += TokenToPiece(id, render_special);
  return out;
}

}  // namespace ellm

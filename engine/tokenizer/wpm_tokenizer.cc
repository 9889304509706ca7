#include "tokenizer/wpm_tokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace ellm::tokenizer {
namespace {

constexpr std::string_view kWordPrefix = "\xE2\x96\x81";  // U+2581 "▁"
constexpr uint32_t kReplacement = 0xFFFD;
constexpr uint32_t kMaxCodepoint = 0x10FFFF;

constexpr std::string_view kLowercaseKey = "tokenizer.ggml.normalizer.lowercase";
constexpr std::string_view kStripAccentsKey = "tokenizer.ggml.normalizer.strip_accents";

// llama.cpp's is_chinese_char, ranges verbatim (HF's BERT has the same
// 0x2B920 start where the CJK Extension E block starts at 0x2B820).
bool IsChineseChar(uint32_t cp) {
  return (cp >= 0x04E00 && cp <= 0x09FFF) || (cp >= 0x03400 && cp <= 0x04DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0x0F900 && cp <= 0x0FAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::string Where(const gguf::GgufFile& f, std::string_view key) {
  return "GGUF file '" + f.path() + "': key '" + std::string(key) + "'";
}

// An optional bool key: absent leaves `out` alone.
Status ReadOptionalBool(const gguf::GgufFile& f, std::string_view key, bool& out) {
  if (f.Find(key) == nullptr) return OkStatus();
  auto v = f.GetBool(key);
  if (!v.ok()) return v.status();
  out = *v;
  return OkStatus();
}

// llama_unescape_whitespace: every "▁" becomes a space.
std::string Unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kWordPrefix.size(), kWordPrefix) == 0) {
      out += ' ';
      i += kWordPrefix.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace

struct WpmTokenizer::Scratch {
  std::vector<uint32_t> cps;
  std::string word;  // "▁" + the normalized word so far
};

StatusOr<std::unique_ptr<Tokenizer>> WpmTokenizer::FromGguf(const gguf::GgufFile& file) {
  // llama.cpp's defaults for "bert"; the file's keys override them.
  VocabDefaults defaults;
  defaults.bos = 101;  // [CLS]
  defaults.eos = -1;
  defaults.unk = 100;  // [UNK]
  defaults.sep = 102;  // [SEP]
  defaults.add_bos = true;
  defaults.add_eos = false;
  defaults.add_space_prefix = false;
  auto vocab = LoadVocab(file, defaults);
  if (!vocab.ok()) return vocab.status();

  Normalizer normalizer;
  Status s = ReadOptionalBool(file, kLowercaseKey, normalizer.lowercase);
  normalizer.strip_accents = normalizer.lowercase;
  if (s.ok()) s = ReadOptionalBool(file, kStripAccentsKey, normalizer.strip_accents);
  if (!s.ok()) return s;

  const Vocab& v = **vocab;
  struct Required {
    const char* name;
    std::string_view key;
    TokenId id;
    TokenId default_id;
  };
  const Required required[] = {
      {"[CLS]", "tokenizer.ggml.bos_token_id", v.bos, defaults.bos},
      {"[SEP]", "tokenizer.ggml.seperator_token_id", v.sep, defaults.sep},
      {"[UNK]", "tokenizer.ggml.unknown_token_id", v.unk, defaults.unk},
  };
  for (const Required& r : required) {
    if (r.id != -1) continue;
    return InvalidArgumentError(
        Where(file, r.key) + " is absent or outside the vocabulary of " + std::to_string(v.size()) +
        " tokens, and so is the default id " + std::to_string(r.default_id) +
        "; a WordPiece ('bert') vocabulary needs its " + r.name + " token (set the key to its id)");
  }
  return std::unique_ptr<Tokenizer>(
      new WpmTokenizer(std::move(vocab).value(), normalizer));  // private constructor
}

WpmTokenizer::WpmTokenizer(std::unique_ptr<const Vocab> vocab, Normalizer normalizer)
    : VocabTokenizer(std::move(vocab)), normalizer_(normalizer), splitter_(*vocab_) {
  // llama.cpp's token_to_piece with special = true (its cache_token_to_piece).
  pieces_.resize(static_cast<size_t>(vocab_->size()));
  for (TokenId id = 0; id < vocab_->size(); ++id) {
    const std::string& text = vocab_->text[id];
    max_token_len_ = std::max(max_token_len_, text.size());
    if (vocab_->Has(id, attr::kUnknown | attr::kControl | attr::kUserDefined)) {
      pieces_[id] = text;
    } else if (vocab_->Has(id, attr::kNormal)) {
      pieces_[id] = Unescape(text);
    }  // Byte tokens (llama.cpp aborts on them in a WPM vocabulary), UNUSED-only
       // and UNDEFINED tokens render as nothing.
  }
}

std::vector<TokenId> WpmTokenizer::Encode(std::string_view text, bool add_bos,
                                          bool parse_special) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 4 + 2);
  if (add_bos) out.push_back(vocab_->bos);
  Scratch scratch;
  for (const Fragment& f : splitter_.Split(text, parse_special)) {
    if (f.token != -1) {
      out.push_back(f.token);
    } else {
      EncodeFragment(text.substr(f.offset, f.length), scratch, out);
    }
  }
  if (add_bos) out.push_back(vocab_->sep);
  return out;
}

// llm_tokenizer_wpm_session::preprocess, with each word tokenized as soon as
// it ends instead of collected first (the words and their order are the same).
void WpmTokenizer::EncodeFragment(std::string_view text, Scratch& scratch,
                                  std::vector<TokenId>& out) const {
  DecodeUtf8(text, scratch.cps);
  std::string& word = scratch.word;
  word.assign(kWordPrefix);
  auto end_word = [&] {
    if (word.size() > kWordPrefix.size()) EncodeWord(word, out);
    word.resize(kWordPrefix.size());
  };
  for (uint32_t cp : scratch.cps) {
    if (normalizer_.strip_accents) cp = NfdFirst(cp);
    const uint16_t flags = CodepointFlags(cp);
    if (flags & cpflag::kWhitespace) {
      end_word();
      continue;
    }
    if (cp == 0 || cp == kReplacement || cp > kMaxCodepoint || (flags & cpflag::kControl)) continue;
    if (normalizer_.strip_accents && (flags & cpflag::kMark)) continue;
    const uint32_t c = normalizer_.lowercase ? ToLower(cp) : cp;
    if ((flags & cpflag::kPunctuation) || (cp < 0x7F && (flags & cpflag::kSymbol)) ||
        IsChineseChar(cp)) {
      end_word();
      AppendUtf8(c, word);
      end_word();
    } else {
      AppendUtf8(c, word);
    }
  }
  end_word();
}

// The loop of llm_tokenizer_wpm_session::tokenize for one word: from each
// position the longest token, until the word is used up; a position where no
// token starts discards the word's tokens for one UNK. Lookups are of bytes,
// as in llama.cpp.
void WpmTokenizer::EncodeWord(std::string_view word, std::vector<TokenId>& out) const {
  const size_t first = out.size();
  for (size_t i = 0; i < word.size();) {
    TokenId id = -1;
    size_t j = std::min(word.size(), i + max_token_len_);
    for (; j > i; --j) {
      id = vocab_->Find(word.substr(i, j - i));
      if (id != -1) break;
    }
    if (id == -1) {
      out.resize(first);
      out.push_back(vocab_->unk);
      return;
    }
    out.push_back(id);
    i = j;
  }
}

}  // namespace ellm::tokenizer

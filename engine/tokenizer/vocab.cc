// LoadVocab: llama.cpp's llama_vocab::impl::load, the parts that apply to
// every tokenizer model (tokens, scores, types, special ids, flags, EOG set,
// attribute fix-ups). The order of the fix-ups follows llama.cpp because
// later steps read the attributes earlier ones set.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <iterator>
#include <string>

namespace ellm::tokenizer {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// DeepSeek's special tokens use fullwidth bars and "▁".
constexpr std::string_view kDeepSeekEnd = "<｜end▁of▁sentence｜>";
constexpr std::string_view kDeepSeekFimBegin = "<｜fim▁begin｜>";
constexpr std::string_view kDeepSeekFimHole = "<｜fim▁hole｜>";
constexpr std::string_view kDeepSeekFimEnd = "<｜fim▁end｜>";

// Texts llama.cpp treats as end of generation (and makes control tokens).
constexpr std::string_view kEndOfGenerationTexts[] = {"<|eot_id|>",
                                                      "<|im_end|>",
                                                      "<|end|>",
                                                      "<|return|>",
                                                      "<|call|>",
                                                      "<|flush|>",
                                                      "<|calls|>",
                                                      "<end_of_turn>",
                                                      "<|endoftext|>",
                                                      "</s>",
                                                      "<|eom_id|>",
                                                      "<EOT>",
                                                      "_<EOT>",
                                                      "[EOT]",
                                                      "[EOS]",
                                                      "<|end_of_text|>",
                                                      "<end_of_utterance>",
                                                      "<eos>",
                                                      "<turn|>",
                                                      "<|tool_response>",
                                                      kDeepSeekEnd,
                                                      "[e~["};

std::string Where(const gguf::GgufFile& f, std::string_view key) {
  return "GGUF file '" + f.path() + "': key '" + std::string(key) + "'";
}

template <typename T>
T ReadLe(const gguf::Array& a, size_t i) {
  T v;
  std::memcpy(&v, a.raw.data() + i * sizeof(T), sizeof(T));
  return v;
}

// An optional bool key: absent leaves `out` alone.
Status ReadOptionalBool(const gguf::GgufFile& f, std::string_view key, bool& out) {
  if (f.Find(key) == nullptr) return OkStatus();
  auto v = f.GetBool(key);
  if (!v.ok()) return v.status();
  out = *v;
  return OkStatus();
}

// An optional token-id key. `strict`: an id outside the vocabulary is an
// error; otherwise it is ignored, as llama.cpp does for every special id.
Status ReadOptionalId(const gguf::GgufFile& f, std::string_view key, int32_t n_tokens, bool strict,
                      TokenId& out) {
  if (f.Find(key) == nullptr) return OkStatus();
  auto v = f.GetInt(key);
  if (!v.ok()) return v.status();
  if (*v < 0 || *v >= n_tokens) {
    if (!strict) return OkStatus();
    return OutOfRangeError(Where(f, key) + " is " + std::to_string(*v) +
                           ", outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
  }
  out = static_cast<TokenId>(*v);
  return OkStatus();
}

Status ReadTokens(const gguf::GgufFile& f, Vocab& v) {
  auto tokens = f.GetArray(kTokensKey, gguf::ValueType::kString);
  if (!tokens.ok()) return tokens.status();
  const auto& strings = (*tokens)->strings;
  if (strings.empty()) return InvalidArgumentError(Where(f, kTokensKey) + " is an empty array");
  if (strings.size() > static_cast<size_t>(INT32_MAX)) {
    return OutOfRangeError(Where(f, kTokensKey) + " has more tokens than fit a 32-bit id");
  }
  v.text.reserve(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    // llama.cpp copies each token through a C string, so text after an
    // embedded NUL is lost, and an empty token is renamed.
    std::string_view s = strings[i];
    s = s.substr(0, std::min(s.size(), s.find('\0')));
    v.text.emplace_back(s.empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::string(s));
  }
  if (TokenId dup = v.index.Build(v.text); dup != -1) {
    return InvalidArgumentError(Where(f, kTokensKey) + ": duplicate token '" + v.text[dup] +
                                "' at ids " + std::to_string(v.Find(v.text[dup])) + " and " +
                                std::to_string(dup));
  }
  return OkStatus();
}

Status ReadScores(const gguf::GgufFile& f, Vocab& v) {
  const size_t n = v.text.size();
  v.score.assign(n, 0.0f);
  const gguf::Value* value = f.Find(kScoresKey);
  if (value == nullptr) return OkStatus();
  if (value->type != gguf::ValueType::kArray ||
      (value->array->elem_type != gguf::ValueType::kFloat32 &&
       value->array->elem_type != gguf::ValueType::kInt32)) {
    return InvalidArgumentError(Where(f, kScoresKey) +
                                " must be an array of float32 (or int32) scores");
  }
  const gguf::Array& a = *value->array;
  if (a.count != n) {
    return InvalidArgumentError(Where(f, kScoresKey) + " has " + std::to_string(a.count) +
                                " scores for " + std::to_string(n) + " tokens");
  }
  for (size_t i = 0; i < n; ++i) {
    v.score[i] = a.elem_type == gguf::ValueType::kFloat32
                     ? ReadLe<float>(a, i)
                     : static_cast<float>(ReadLe<int32_t>(a, i));
  }
  return OkStatus();
}

Status ReadTypes(const gguf::GgufFile& f, Vocab& v) {
  const size_t n = v.text.size();
  v.type.assign(n, TokenType::kNormal);
  v.attrs.assign(n, attr::kNormal);
  if (f.Find(kTypesKey) == nullptr) return OkStatus();
  auto types = f.GetArray(kTypesKey, gguf::ValueType::kInt32);
  if (!types.ok()) return types.status();
  const gguf::Array& a = **types;
  if (a.count != n) {
    return InvalidArgumentError(Where(f, kTypesKey) + " has " + std::to_string(a.count) +
                                " entries for " + std::to_string(n) + " tokens");
  }
  static constexpr std::array<uint32_t, 7> kAttrOfType = {
      attr::kUndefined,   attr::kNormal, attr::kUnknown, attr::kControl,
      attr::kUserDefined, attr::kUnused, attr::kByte};
  for (size_t i = 0; i < n; ++i) {
    int32_t t = ReadLe<int32_t>(a, i);
    if (t < 0 || t >= static_cast<int32_t>(kAttrOfType.size())) {
      return InvalidArgumentError(Where(f, kTypesKey) + ": token " + std::to_string(i) + " ('" +
                                  v.text[i] + "') has type " + std::to_string(t) +
                                  "; expected 0..6 (llama_token_type)");
    }
    v.type[i] = static_cast<TokenType>(t);
    v.attrs[i] = kAttrOfType[static_cast<size_t>(t)];
  }
  return OkStatus();
}

// llama.cpp finds EOT, EOM and FIM tokens by their text when the file gives
// no id, and makes the token it picks a control token. (llama.cpp takes the
// first match in hash order; we take the lowest id, which only differs for
// vocabularies holding two spellings of the same role.)
void DetectByText(Vocab& v, TokenId& id, std::initializer_list<std::string_view> texts) {
  if (id != -1) return;
  for (std::string_view t : texts) {
    TokenId found = v.Find(t);
    if (found != -1 && (id == -1 || found < id)) id = found;
  }
  if (id != -1) v.attrs[id] |= attr::kControl;
}

struct FimIds {
  TokenId pre = -1, suf = -1, mid = -1, pad = -1, rep = -1, sep = -1;
};

Status ReadSpecialIds(const gguf::GgufFile& f, Vocab& v, FimIds& fim) {
  const int32_t n = v.size();
  for (TokenId* id : {&v.bos, &v.eos, &v.unk, &v.sep}) {
    if (*id >= n) *id = -1;  // a default outside a small vocabulary is disabled
  }
  struct Key {
    std::string_view key;
    TokenId* id;
    bool strict;  // we rely on these two; llama.cpp falls back to the default
  };
  const Key keys[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos, true},
      {"tokenizer.ggml.eos_token_id", &v.eos, true},
      {"tokenizer.ggml.eot_token_id", &v.eot, false},
      {"tokenizer.ggml.eom_token_id", &v.eom, false},
      {"tokenizer.ggml.unknown_token_id", &v.unk, false},
      {"tokenizer.ggml.seperator_token_id", &v.sep, false},  // sic, llama.cpp's spelling
      {"tokenizer.ggml.fim_pre_token_id", &fim.pre, false},
      {"tokenizer.ggml.fim_suf_token_id", &fim.suf, false},
      {"tokenizer.ggml.fim_mid_token_id", &fim.mid, false},
      {"tokenizer.ggml.fim_pad_token_id", &fim.pad, false},
      {"tokenizer.ggml.fim_rep_token_id", &fim.rep, false},
      {"tokenizer.ggml.fim_sep_token_id", &fim.sep, false},
      {"tokenizer.ggml.prefix_token_id", &fim.pre, false},  // deprecated spellings
      {"tokenizer.ggml.suffix_token_id", &fim.suf, false},
      {"tokenizer.ggml.middle_token_id", &fim.mid, false},
  };
  for (const Key& k : keys) {
    Status s = ReadOptionalId(f, k.key, n, k.strict, *k.id);
    if (!s.ok()) return s;
  }
  return OkStatus();
}

// The text-based fix-ups of llama_vocab::impl::load, in its order.
void ApplyTextRules(Vocab& v, FimIds& fim) {
  DetectByText(v, v.eot,
               {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", kDeepSeekEnd, "<end_of_utterance>"});
  DetectByText(v, v.eom, {"<|eom_id|>"});
  DetectByText(v, fim.pre,
               {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", kDeepSeekFimBegin, "<PRE>",
                "▁<PRE>", "<|code_prefix|>", "<|prefix|>"});
  DetectByText(v, fim.suf,
               {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", kDeepSeekFimHole, "<SUF>",
                "▁<SUF>", "<|code_suffix|>", "<|suffix|>"});
  DetectByText(v, fim.mid,
               {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", kDeepSeekFimEnd, "<MID>",
                "▁<MID>", "<|code_middle|>", "<|middle|>"});
  DetectByText(v, fim.pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  DetectByText(v, fim.rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  DetectByText(v, fim.sep, {"<|file_sep|>"});

  const int32_t n = v.size();
  for (TokenId id = 0; id < n; ++id) {
    if (v.Has(id, attr::kControl) && v.text[id].find("unused") != std::string::npos) {
      v.attrs[id] |= attr::kUnused;
    }
  }

  v.is_eog.assign(static_cast<size_t>(n), 0);
  for (TokenId id : {fim.pad, fim.rep, fim.sep}) {
    if (id != -1) v.is_eog[id] = 1;
  }
  for (TokenId id = 0; id < n; ++id) {
    const std::string& t = v.text[id];
    if (std::find(std::begin(kEndOfGenerationTexts), std::end(kEndOfGenerationTexts), t) !=
        std::end(kEndOfGenerationTexts)) {
      v.is_eog[id] = 1;
      v.attrs[id] |= attr::kControl;
    }
  }
  for (std::string_view t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    if (TokenId id = v.Find(t); id != -1) v.attrs[id] = attr::kUserDefined;  // gpt-oss
  }
  for (TokenId id : {v.eos, v.eot, v.eom}) {
    if (id != -1) v.is_eog[id] = 1;
  }
  // o200k_harmony / solar-open: "<|end|>" ends a message, not generation.
  auto eog_text = [&](std::string_view t) {
    TokenId id = v.Find(t);
    return id != -1 && v.is_eog[id];
  };
  const bool has_call = eog_text("<|call|>") || eog_text("<|calls|>");
  if (eog_text("<|end|>") && has_call && (eog_text("<|return|>") || eog_text("<|flush|>"))) {
    TokenId end = v.Find("<|end|>");
    v.is_eog[end] = 0;
    v.attrs[end] = attr::kUserDefined;
  }
  // Gemma 4 and PLaMo have a normal "</s>" (PaddleOCR's ends generation).
  if ((eog_text("<|tool_response>") || eog_text("<|plamo:eos|>")) && eog_text("</s>")) {
    TokenId s = v.Find("</s>");
    v.is_eog[s] = 0;
    v.attrs[s] = attr::kNormal;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string OptionalString(const gguf::GgufFile& f, std::string_view key) {
  auto s = f.GetString(key);
  return s.ok() ? std::string(*s) : std::string();
}

// llama.cpp's per-model LSTRIP/RSTRIP attributes, chosen by name because the
// files do not carry them.
void ApplyStripRules(const gguf::GgufFile& f, Vocab& v) {
  auto contains_any = [](const std::string& s, std::initializer_list<std::string_view> subs) {
    return std::any_of(subs.begin(), subs.end(),
                       [&](std::string_view sub) { return s.find(sub) != std::string::npos; });
  };
  auto set = [&](std::string_view text, uint32_t bit, bool on) {
    TokenId id = v.Find(text);
    if (id == -1) return;
    v.attrs[id] = on ? (v.attrs[id] | bit) : (v.attrs[id] & ~bit);
  };
  const std::string name = Lower(OptionalString(f, "general.name"));
  const std::string pre = OptionalString(f, "tokenizer.ggml.pre");
  const std::string arch = OptionalString(f, "general.architecture");
  if (contains_any(pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set("<mask>", attr::kLstrip, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (TokenId id = 0; id < v.size(); ++id) {
      if (v.Has(id, attr::kControl | attr::kUserDefined | attr::kUnknown)) {
        v.attrs[id] |= attr::kRstrip;
      }
    }
    set("</s>", attr::kRstrip, true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, attr::kRstrip, false);
  } else if (contains_any(name, {"modern-bert"})) {
    set("[MASK]", attr::kLstrip, true);
  }
}

}  // namespace

uint64_t TokenIndex::Hash(std::string_view s) {
  // FNV-1a, then a final mix so that the low bits (the slot) and the high
  // bits (the tag) both depend on every byte.
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

TokenId TokenIndex::Build(const std::vector<std::string>& text) {
  text_ = &text;
  size_t capacity = 16;
  while (capacity < 2 * text.size()) capacity *= 2;  // load factor <= 1/2
  slots_.assign(capacity, Slot{0, -1});
  mask_ = capacity - 1;
  max_len_ = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (Find(text[i]) != -1) return static_cast<TokenId>(i);
    const uint64_t h = Hash(text[i]);
    uint64_t at = h & mask_;
    while (slots_[at].id != -1) at = (at + 1) & mask_;
    slots_[at] = Slot{static_cast<uint32_t>(h >> 32), static_cast<TokenId>(i)};
    max_len_ = std::max(max_len_, text[i].size());
  }
  return -1;
}

TokenId TokenIndex::Find(std::string_view s) const {
  if (s.size() > max_len_ || slots_.empty()) return -1;
  const uint64_t h = Hash(s);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t at = h & mask_;; at = (at + 1) & mask_) {
    const Slot& slot = slots_[at];
    if (slot.id == -1) return -1;
    if (slot.tag == tag && (*text_)[slot.id] == s) return slot.id;
  }
}

StatusOr<std::unique_ptr<const Vocab>> LoadVocab(const gguf::GgufFile& file,
                                                 const VocabDefaults& defaults) {
  auto v = std::make_unique<Vocab>();
  v->path = file.path();
  v->bos = defaults.bos;
  v->eos = defaults.eos;
  v->unk = defaults.unk;
  v->sep = defaults.sep;
  v->add_bos = defaults.add_bos;
  v->add_eos = defaults.add_eos;
  v->add_space_prefix = defaults.add_space_prefix;

  Status s = ReadOptionalBool(file, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
  if (s.ok()) s = ReadTokens(file, *v);
  if (s.ok()) s = ReadScores(file, *v);
  if (s.ok()) s = ReadTypes(file, *v);
  FimIds fim;
  if (s.ok()) s = ReadSpecialIds(file, *v, fim);
  if (s.ok()) s = ReadOptionalBool(file, "tokenizer.ggml.add_bos_token", v->add_bos);
  if (s.ok()) s = ReadOptionalBool(file, "tokenizer.ggml.add_eos_token", v->add_eos);
  if (!s.ok()) return s;
  if (v->add_bos && v->bos == -1) {
    return InvalidArgumentError(Where(file, "tokenizer.ggml.add_bos_token") +
                                " is true, but tokenizer.ggml.bos_token_id is not set");
  }
  if (v->add_eos && v->eos == -1) {
    return InvalidArgumentError(Where(file, "tokenizer.ggml.add_eos_token") +
                                " is true, but tokenizer.ggml.eos_token_id is not set");
  }
  ApplyTextRules(*v, fim);
  ApplyStripRules(file, *v);
  return std::unique_ptr<const Vocab>(std::move(v));
}

}  // namespace ellm::tokenizer

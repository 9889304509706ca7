#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace ellm::tokenizer {
namespace {

constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

std::string Where(const gguf::GgufFile& f, std::string_view key) {
  return "GGUF file '" + f.path() + "': key '" + std::string(key) + "'";
}

struct Symbol {
  int32_t prev;
  int32_t next;
  int32_t id;       // symbol id of its text, -1 if none
  uint32_t offset;  // into the word's byte-level text
  uint32_t n;       // bytes of byte-level text; 0 once merged into its left neighbour
};

struct Bigram {
  int32_t left;
  int32_t right;
  int32_t rank;
  int32_t left_id;  // the symbols' ids when queued, to skip stale pairs
  int32_t right_id;
  int32_t result;
};

// llama.cpp's llm_bigram_bpe::comparator: the top of the heap is the lowest
// rank, and among equal ranks the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
  }
};

// The byte a <0xNN> token stands for, as llama.cpp's token_to_byte:
// strtol(text.substr(3, 2), 16). (Byte-type tokens are rare in BPE files.)
char ByteOfToken(const std::string& text) {
  int value = 0;
  for (size_t i = 3; i < std::min<size_t>(text.size(), 5); ++i) {
    const char c = text[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) break;
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

// llama.cpp's llama_decode_text: byte-level text back to raw bytes; a code
// point outside the byte alphabet is written as "[UNK_BYTE_0x<its UTF-8 in
// hex><the whole token text>]".
std::string DecodeByteLevel(const std::string& text) {
  std::vector<uint32_t> cps;
  DecodeUtf8(text, cps);
  std::string out;
  for (uint32_t cp : cps) {
    const int byte = CodepointToByte(cp);
    if (byte >= 0) {
      out += static_cast<char>(byte);
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string utf8;
    AppendUtf8(cp, utf8);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      out += kHex[static_cast<uint8_t>(c) >> 4];
      out += kHex[static_cast<uint8_t>(c) & 15];
    }
    out += text + "]";
  }
  return out;
}

// Symbol ids are >= 0, so no pair has the empty-slot key.
constexpr uint64_t kNoKey = ~0ull;

uint64_t PairKey(int32_t left, int32_t right) {
  return static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
}

uint64_t PairSlot(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 20; }

// llama.cpp's unicode_len_utf8: the length of a UTF-8 sequence from its lead byte.
size_t Utf8Length(char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[static_cast<uint8_t>(lead) >> 4];
}

// llama_unescape_whitespace: every U+2581 becomes ' '.
std::string UnescapeWhitespace(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

struct BpeTokenizer::Scratch {
  std::vector<uint32_t> cps;
  std::vector<uint16_t> flags;
  std::vector<uint32_t> word_lengths;
  std::string escaped;  // the fragment with spaces escaped (SPM-style BPE)
  std::string bytes;    // one word's UTF-8
  std::string text;     // ... in the byte-level alphabet
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
};

StatusOr<std::unique_ptr<Tokenizer>> BpeTokenizer::FromGguf(const gguf::GgufFile& file,
                                                            std::string_view model) {
  // llama.cpp reads tokenizer.ggml.pre for "gpt2" files and sets it to
  // "gemma4" for "gemma4" files.
  const bool gemma4 = model == "gemma4";
  std::string_view pre_name = "gemma4";
  if (!gemma4) {
    if (file.Find(kPreKey) == nullptr) {
      return NotFoundError(Where(file, kPreKey) +
                           " is missing; a byte-level BPE ('gpt2') vocabulary needs its "
                           "pre-tokenizer (llama.cpp falls back to 'default' and warns that "
                           "generation quality will be degraded; supported: " +
                           SupportedPreTokenizers() + ")");
    }
    auto name = file.GetString(kPreKey);
    if (!name.ok()) return name.status();
    pre_name = *name;
  }
  const std::optional<PreTokenizerSpec> pre = FindPreTokenizer(pre_name);
  if (!pre) {
    return UnimplementedError(Where(file, kPreKey) + " is '" + std::string(pre_name) +
                              "'; llama.cpp v0.5.0 knows no such pre-tokenizer (supported: " +
                              SupportedPreTokenizers() + ")");
  }
  auto splitter = PreTokenizer::Create(pre->exprs);
  if (!splitter.ok()) return InternalError(splitter.status().message());
  std::vector<std::string_view> merges;
  if (file.Find(kMergesKey) != nullptr || !pre->merges_optional) {
    auto array = file.GetArray(kMergesKey, gguf::ValueType::kString);
    if (!array.ok()) return array.status();
    merges = (*array)->strings;
  }

  // llama.cpp's defaults for BPE vocabularies; the file's keys override them.
  VocabDefaults defaults;
  defaults.bos = gemma4 || pre->no_default_bos ? -1 : 11;
  defaults.eos = gemma4 ? -1 : 11;
  defaults.unk = -1;
  defaults.add_bos = pre->add_bos_default;
  defaults.add_eos = false;
  defaults.add_space_prefix = false;
  auto vocab = LoadVocab(file, defaults);
  if (!vocab.ok()) return vocab.status();

  std::unique_ptr<BpeTokenizer> tok(
      new BpeTokenizer(std::move(vocab).value(), *pre, std::move(splitter).value()));
  tok->BuildMerges(merges);
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

BpeTokenizer::BpeTokenizer(std::unique_ptr<const Vocab> vocab, PreTokenizerSpec spec,
                           PreTokenizer pre)
    : VocabTokenizer(std::move(vocab)), spec_(spec), pre_(std::move(pre)), splitter_(*vocab_) {
  // llama.cpp's token_to_piece with special = true (its cache_token_to_piece).
  pieces_.resize(static_cast<size_t>(vocab_->size()));
  for (TokenId id = 0; id < vocab_->size(); ++id) {
    const std::string& text = vocab_->text[id];
    if (vocab_->Has(id, attr::kUnknown | attr::kControl | attr::kUserDefined)) {
      pieces_[id] = text;
    } else if (vocab_->Has(id, attr::kNormal)) {
      pieces_[id] = spec_.escape_whitespaces ? UnescapeWhitespace(text) : DecodeByteLevel(text);
    } else if (vocab_->Has(id, attr::kByte)) {
      pieces_[id] = std::string(1, ByteOfToken(text));
    }  // UNUSED-only and UNDEFINED tokens render as nothing.
  }
}

int32_t BpeTokenizer::SymbolId(std::string_view s) const {
  if (TokenId id = vocab_->Find(s); id != -1) return id;
  auto it = extra_symbols_.find(std::string(s));
  return it == extra_symbols_.end() ? -1 : it->second;
}

void BpeTokenizer::BuildMerges(const std::vector<std::string_view>& merges) {
  // A merge is "left right", split at the first space after the first byte
  // (llama.cpp: word.find(' ', 1)); one without such a space can never apply.
  // llama.cpp reads each merge as a C string.
  struct Parts {
    std::string_view left, right;
    int32_t left_id = -1, right_id = -1;
  };
  std::vector<Parts> parts(merges.size());
  int32_t next_extra = vocab_->size();
  auto intern = [&](std::string_view s) {
    int32_t id = SymbolId(s);
    if (id == -1) {
      id = next_extra++;
      extra_symbols_.emplace(std::string(s), id);
    }
    return id;
  };
  for (size_t i = 0; i < merges.size(); ++i) {
    std::string_view m = merges[i].substr(0, std::min(merges[i].size(), merges[i].find('\0')));
    const size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) continue;
    parts[i] = {m.substr(0, space), m.substr(space + 1)};
    parts[i].left_id = intern(parts[i].left);
    parts[i].right_id = intern(parts[i].right);
  }

  size_t capacity = 16;
  while (capacity * 3 < merges.size() * 4) capacity *= 2;
  merges_.assign(capacity, Merge{kNoKey, 0, 0});
  merge_mask_ = capacity - 1;
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Parts& p = parts[rank];
    if (p.left_id == -1) continue;
    const uint64_t key = PairKey(p.left_id, p.right_id);
    uint64_t at = PairSlot(key) & merge_mask_;
    while (merges_[at].key != kNoKey && merges_[at].key != key) at = (at + 1) & merge_mask_;
    if (merges_[at].key == key) continue;  // listed before, with a lower rank
    joined.assign(p.left).append(p.right);
    merges_[at] = Merge{key, static_cast<int32_t>(rank), SymbolId(joined)};
  }
  for (int b = 0; b < 256; ++b) {
    byte_text_[b].clear();
    AppendUtf8(ByteToCodepoint(static_cast<uint8_t>(b)), byte_text_[b]);
    byte_symbol_[b] = SymbolId(byte_text_[b]);
    static constexpr char kHex[] = "0123456789ABCDEF";
    const char name[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    byte_token_[b] = vocab_->Find(std::string_view(name, sizeof(name)));
  }
}

const BpeTokenizer::Merge* BpeTokenizer::FindMerge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  const uint64_t key = PairKey(left, right);
  for (uint64_t at = PairSlot(key) & merge_mask_;; at = (at + 1) & merge_mask_) {
    const Merge& m = merges_[at];
    if (m.key == key) return &m;
    if (m.key == kNoKey) return nullptr;
  }
}

std::vector<TokenId> BpeTokenizer::Encode(std::string_view text, bool add_bos,
                                          bool parse_special) const {
  const Vocab& v = *vocab_;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && v.add_bos) out.push_back(v.bos);
  Scratch scratch;
  for (const Fragment& f : splitter_.Split(text, parse_special)) {
    if (f.token != -1) {
      out.push_back(f.token);
    } else {
      EncodeFragment(text.substr(f.offset, f.length), scratch, out);
    }
  }
  if (add_bos && v.add_eos) out.push_back(v.eos);
  return out;
}

void BpeTokenizer::EncodeFragment(std::string_view text, Scratch& s,
                                  std::vector<TokenId>& out) const {
  if (spec_.escape_whitespaces) {
    // llama_escape_whitespace: every ' ' becomes U+2581.
    s.escaped.clear();
    for (char c : text) {
      if (c == ' ') {
        s.escaped += "\xE2\x96\x81";
      } else {
        s.escaped += c;
      }
    }
    text = s.escaped;
  }
  DecodeUtf8(text, s.cps);
  s.flags.resize(s.cps.size());
  for (size_t i = 0; i < s.cps.size(); ++i) s.flags[i] = CodepointFlags(s.cps[i]);
  s.word_lengths.clear();
  pre_.Split(s.cps, s.flags, s.word_lengths);
  size_t at = 0;
  for (uint32_t n : s.word_lengths) {
    EncodeWord(std::span<const uint32_t>(s.cps).subspan(at, n), s, out);
    at += n;
  }
}

void BpeTokenizer::EncodeWord(std::span<const uint32_t> cps, Scratch& s,
                              std::vector<TokenId>& out) const {
  const Vocab& v = *vocab_;
  s.bytes.clear();
  for (uint32_t cp : cps) AppendUtf8(cp, s.bytes);
  s.text.clear();
  s.symbols.clear();
  if (spec_.byte_encode) {
    // One symbol per byte, in the byte-level alphabet.
    for (char c : s.bytes) {
      const auto b = static_cast<uint8_t>(c);
      s.symbols.push_back({0, 0, byte_symbol_[b], static_cast<uint32_t>(s.text.size()),
                           static_cast<uint32_t>(byte_text_[b].size())});
      s.text += byte_text_[b];
    }
  } else {
    // Raw UTF-8, one symbol per code point.
    s.text = s.bytes;
    for (size_t at = 0; at < s.text.size();) {
      const size_t len = std::min(s.text.size() - at, Utf8Length(s.text[at]));
      s.symbols.push_back({0, 0, SymbolId(std::string_view(s.text).substr(at, len)),
                           static_cast<uint32_t>(at), static_cast<uint32_t>(len)});
      at += len;
    }
  }
  const auto n_symbols = static_cast<int32_t>(s.symbols.size());
  for (int32_t i = 0; i < n_symbols; ++i) {
    s.symbols[i].prev = i - 1;
    s.symbols[i].next = i + 1 == n_symbols ? -1 : i + 1;
  }
  const bool whole = spec_.ignore_merges || (spec_.whole_newline_words &&
                                             s.text.find_first_not_of('\n') == std::string::npos);
  if (whole) {
    if (TokenId id = v.Find(s.text); id != -1) {
      out.push_back(id);
      return;
    }
  }

  // A min-heap of candidate pairs (BigramLess), kept in `s` for reuse.
  std::vector<Symbol>& sym = s.symbols;
  std::vector<Bigram>& heap = s.heap;
  heap.clear();
  auto try_add = [&](int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Merge* m = FindMerge(sym[left].id, sym[right].id);
    if (m == nullptr) return;
    heap.push_back({left, right, m->rank, sym[left].id, sym[right].id, m->result});
    std::push_heap(heap.begin(), heap.end(), BigramLess());
  };
  for (int32_t i = 1; i < n_symbols; ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = sym[b.left];
    Symbol& right = sym[b.right];
    // Skip pairs one of whose symbols has changed since the pair was queued
    // (a symbol's id names its text, and text only grows).
    if (left.n == 0 || right.n == 0 || left.id != b.left_id || right.id != b.right_id) continue;
    left.n += right.n;
    left.id = b.result;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int32_t i = n_symbols == 0 ? -1 : 0; i != -1; i = sym[i].next) {
    const Symbol& x = sym[i];
    if (x.id >= 0 && x.id < v.size()) {
      out.push_back(x.id);
      continue;
    }
    // Not a token: llama.cpp emits, for each byte of the symbol's text, the
    // one-byte token of that byte-level character (or, without byte
    // encoding, the <0xNN> token of the byte), and drops the bytes that have none.
    for (char c : std::string_view(s.text).substr(x.offset, x.n)) {
      const TokenId id = spec_.byte_encode ? v.Find(std::string_view(&c, 1))
                                           : byte_token_[static_cast<uint8_t>(c)];
      if (id != -1) out.push_back(id);
    }
  }
}

}  // namespace ellm::tokenizer

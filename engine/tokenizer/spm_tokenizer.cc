#include "tokenizer/spm_tokenizer.h"

#include <algorithm>

namespace ellm::tokenizer {
namespace {

constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // U+2581, SentencePiece's "▁"

// Length of the UTF-8 sequence a byte starts, by its high nibble (llama.cpp's
// unicode_len_utf8: continuation and invalid bytes count as one).
constexpr std::array<uint8_t, 16> kUtf8Len = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t offset;  // into the escaped fragment
  uint32_t n;       // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int32_t left;
  int32_t right;
  float score;
  uint32_t size;
};

// llama.cpp's llm_bigram_spm::comparator: the top is the highest score, and
// among equal scores the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

// The byte a <0xNN> token stands for, as llama.cpp's token_to_byte:
// strtol(text.substr(3, 2), 16).
char ByteOfToken(const std::string& text) {
  int value = 0;
  for (size_t i = 3; i < std::min<size_t>(text.size(), 5); ++i) {
    char c = text[i];
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) break;
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

std::string Unescape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpaceEscape.size(), kSpaceEscape) == 0) {
      out += ' ';
      i += kSpaceEscape.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace

struct SpmTokenizer::Scratch {
  std::string escaped;
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
};

SpmTokenizer::SpmTokenizer(std::unique_ptr<const Vocab> vocab)
    : VocabTokenizer(std::move(vocab)), splitter_(*vocab_) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    TokenId id = vocab_->Find(std::string_view(name, sizeof(name)));
    if (id == -1) id = vocab_->Find(std::string(1, static_cast<char>(b)));
    byte_token_[static_cast<size_t>(b)] = id != -1 ? id : vocab_->unk;
  }
  // llama.cpp's token_to_piece with special = true (its cache_token_to_piece).
  pieces_.resize(static_cast<size_t>(vocab_->size()));
  for (TokenId id = 0; id < vocab_->size(); ++id) {
    const std::string& text = vocab_->text[id];
    std::string& piece = pieces_[id];
    if (vocab_->Has(id, attr::kUnknown | attr::kControl | attr::kUserDefined)) {
      piece = text;
    } else if (vocab_->Has(id, attr::kNormal)) {
      piece = Unescape(text);
    } else if (vocab_->Has(id, attr::kByte)) {
      piece = std::string(1, ByteOfToken(text));
    }  // UNUSED-only and UNDEFINED tokens render as nothing.
  }
}

std::vector<TokenId> SpmTokenizer::Encode(std::string_view text, bool add_bos,
                                          bool parse_special) const {
  const Vocab& v = *vocab_;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && v.add_bos) out.push_back(v.bos);

  Scratch scratch;
  bool prev_special = true;  // the first fragment counts as following a special token
  for (const Fragment& f : splitter_.Split(text, parse_special)) {
    if (f.token != -1) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    std::string& s = scratch.escaped;
    s.clear();
    if (v.add_space_prefix && prev_special) s += kSpaceEscape;
    for (char c : text.substr(f.offset, f.length)) {
      if (c == ' ') {
        s += kSpaceEscape;
      } else {
        s += c;
      }
    }
    EncodeEscaped(s, scratch, out);
    prev_special = false;
  }
  if (add_bos && v.add_eos) out.push_back(v.eos);
  return out;
}

void SpmTokenizer::EncodeEscaped(std::string_view text, Scratch& scratch,
                                 std::vector<TokenId>& out) const {
  const Vocab& v = *vocab_;
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  for (size_t offs = 0; offs < text.size();) {
    const uint32_t n = std::min<uint32_t>(kUtf8Len[static_cast<uint8_t>(text[offs]) >> 4],
                                          static_cast<uint32_t>(text.size() - offs));
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        {index - 1, offs + n == text.size() ? -1 : index + 1, static_cast<uint32_t>(offs), n});
    offs += n;
  }

  // A max-heap under BigramLess, run exactly as std::priority_queue runs it
  // (push_back + push_heap, pop_heap + pop_back), kept in `scratch` for reuse.
  std::vector<Bigram>& heap = scratch.heap;
  heap.clear();
  auto try_add = [&](int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const uint32_t size = symbols[left].n + symbols[right].n;
    const TokenId id = v.Find(text.substr(symbols[left].offset, size));
    if (id == -1) return;
    heap.push_back({left, right, v.score[id], size});
    std::push_heap(heap.begin(), heap.end(), BigramLess());
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    // Skip pairs one of whose symbols has changed since the pair was queued.
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  // Every merged symbol is a vocabulary token (a pair is queued only if it
  // is one), so llama.cpp's rev_merge re-segmentation never applies: a final
  // symbol is its token, or a single character missing from the vocabulary.
  for (int32_t i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].offset, symbols[i].n);
    const TokenId id = v.Find(piece);
    if (id != -1) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId byte = byte_token_[static_cast<uint8_t>(c)];
      if (byte != -1) out.push_back(byte);
    }
  }
}

}  // namespace ellm::tokenizer

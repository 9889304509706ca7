#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace ellm::tokenizer {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kReplacement = 0xFFFD;

uint16_t LookUp(uint32_t cp) {
  const CodepointRange* end = kCodepointRanges + kNumCodepointRanges;
  const CodepointRange* it = std::upper_bound(
      kCodepointRanges, end, cp, [](uint32_t c, const CodepointRange& r) { return c < r.first; });
  return static_cast<uint16_t>(it[-1].flags);  // the table starts at 0
}

struct ByteTables {
  std::array<uint32_t, 256> to_cp;
  std::array<int16_t, 0x144> to_byte;  // every mapped code point is below U+0144
};

// GPT-2's bytes_to_unicode: the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ'
// stand for themselves; the rest take U+0100, U+0101, ... in byte order.
ByteTables MakeByteTables() {
  ByteTables t;
  t.to_byte.fill(-1);
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable =
        (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    t.to_cp[b] = printable ? b : next++;
    t.to_byte[t.to_cp[b]] = static_cast<int16_t>(b);
  }
  return t;
}

const ByteTables& Tables() {
  static const ByteTables tables = MakeByteTables();
  return tables;
}

// The run of `runs` (sorted by first, not overlapping) whose span holds
// `cp`'s position, or nullptr.
template <typename Run>
const Run* FindRun(const Run* runs, size_t n, uint32_t cp) {
  const Run* it =
      std::upper_bound(runs, runs + n, cp, [](uint32_t c, const Run& r) { return c < r.first; });
  return it == runs ? nullptr : it - 1;
}

bool IsContinuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

}  // namespace

uint16_t CodepointFlags(uint32_t cp) {
  static const std::array<uint16_t, 128> kAscii = [] {
    std::array<uint16_t, 128> a{};
    for (uint32_t c = 0; c < 128; ++c) a[c] = LookUp(c);
    return a;
  }();
  if (cp < 128) return kAscii[cp];
  if (cp > kMaxCodepoint) return cpflag::kUndefined;
  return LookUp(cp);
}

uint32_t ToLower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;  // the table's first run
  const LowercaseRun* r = FindRun(kLowercaseRuns, kNumLowercaseRuns, cp);
  if (r == nullptr) return cp;
  const uint32_t offset = cp - r->first;
  if (offset % r->stride != 0 || offset / r->stride >= r->count) return cp;
  return static_cast<uint32_t>(static_cast<int64_t>(cp) + r->delta);
}

uint32_t NfdFirst(uint32_t cp) {
  if (cp < 0xC0) return cp;  // the table starts at U+00C0
  const NfdRun* r = FindRun(kNfdRuns, kNumNfdRuns, cp);
  return r != nullptr && cp - r->first < r->count ? r->nfd : cp;
}

void DecodeUtf8(std::string_view s, std::vector<uint32_t>& out) {
  out.clear();
  out.reserve(s.size());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    // Sequence length by the lead byte; 0: not a lead byte (continuation, F8..FF).
    const size_t len = b0 < 0x80   ? 1
                       : b0 < 0xC0 ? 0
                       : b0 < 0xE0 ? 2
                       : b0 < 0xF0 ? 3
                       : b0 < 0xF8 ? 4
                                   : 0;
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = IsContinuation(s[i + k]);
    if (!ok) {
      out.push_back(kReplacement);
      ++i;
      continue;
    }
    uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3Fu);
    out.push_back(cp);
    i += len;
  }
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp > kMaxCodepoint) cp = kReplacement;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t ByteToCodepoint(uint8_t b) { return Tables().to_cp[b]; }

int CodepointToByte(uint32_t cp) {
  return cp < Tables().to_byte.size() ? Tables().to_byte[cp] : -1;
}

}  // namespace ellm::tokenizer

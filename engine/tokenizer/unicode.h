// Unicode helpers for the tokenizers, reproducing llama.cpp's src/unicode.cpp
// where it matters for token ids:
//   - DecodeUtf8 / AppendUtf8: llama.cpp's lenient UTF-8 reading (an invalid
//     byte becomes U+FFFD and reading resumes at the next byte; overlong forms
//     and lead bytes F5..F7 are accepted as they decode);
//   - CodepointFlags: the class of a code point (general category and
//     whitespace), from the generated table in unicode_data.cc
//     (gen_unicode_table.py; the Unicode version is kUnicodeVersion);
//   - ToLower / NfdFirst: the WordPiece normalizer's unicode_tolower and
//     unicode_cpts_normalize_nfd, from the same generated file;
//   - the GPT-2 byte <-> code point mapping of byte-level BPE vocabularies.
//
// Thread safety: everything here is stateless or immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ellm::tokenizer {

// Code point class bits. Exactly one of the category bits is set for every
// code point; kWhitespace is llama.cpp's \s set. The values match llama.cpp's
// unicode_cpt_flags (a table row's value is written into unicode_data.cc).
namespace cpflag {
constexpr uint16_t kUndefined = 0x001;  // unassigned (Cn), and anything past U+10FFFF
constexpr uint16_t kNumber = 0x002;     // \p{N}
constexpr uint16_t kLetter = 0x004;     // \p{L}
constexpr uint16_t kSeparator = 0x008;  // \p{Z}
constexpr uint16_t kMark = 0x010;       // \p{M}
constexpr uint16_t kPunctuation = 0x020;
constexpr uint16_t kSymbol = 0x040;
constexpr uint16_t kControl = 0x080;  // Cc, Cf, Co, Cs
constexpr uint16_t kWhitespace = 0x100;
}  // namespace cpflag

struct CodepointRange {
  uint32_t first : 21;
  uint32_t flags : 11;
};
static_assert(sizeof(CodepointRange) == 4);

// cp = first + k * stride, k < count, lower-cases to cp + delta.
struct LowercaseRun {
  uint32_t first;
  uint16_t count;
  uint8_t stride;  // 1, or 2 where upper- and lowercase letters alternate
  int32_t delta;
};

// The code points [first, first + count) all have `nfd` as the first code
// point of their canonical decomposition.
struct NfdRun {
  uint32_t first : 21;
  uint32_t count : 11;
  uint32_t nfd;
};
static_assert(sizeof(NfdRun) == 8);

// unicode_data.cc (generated). kCodepointRanges: sorted by `first`, starting
// at 0. kLowercaseRuns, kNfdRuns: sorted by `first`, not overlapping; code
// points in no run map to themselves.
extern const char kUnicodeVersion[];
extern const CodepointRange kCodepointRanges[];
extern const size_t kNumCodepointRanges;
extern const LowercaseRun kLowercaseRuns[];
extern const size_t kNumLowercaseRuns;
extern const NfdRun kNfdRuns[];
extern const size_t kNumNfdRuns;

// The cpflag:: bits of `cp`; never 0.
uint16_t CodepointFlags(uint32_t cp);

// llama.cpp's unicode_tolower: UnicodeData.txt's simple lowercase mapping
// (one code point to one; U+0130 "İ" gives "i"), else `cp` itself.
uint32_t ToLower(uint32_t cp);

// llama.cpp's unicode_cpts_normalize_nfd, one code point at a time: the FIRST
// code point of `cp`'s canonical decomposition, else `cp` itself. Not NFD:
// the combining marks a decomposition adds are lost ("é" gives "e"), and a
// Hangul syllable gives only its leading consonant ("한" gives U+1112).
uint32_t NfdFirst(uint32_t cp);

// Appends the code points of `text` to `out` (cleared first), as llama.cpp's
// unicode_cpts_from_utf8 reads them. May return values above U+10FFFF (from
// lead bytes F5..F7).
void DecodeUtf8(std::string_view text, std::vector<uint32_t>& out);

// Appends the UTF-8 form of `cp`. Values above U+10FFFF, which llama.cpp
// cannot encode (it throws), are written as U+FFFD.
void AppendUtf8(uint32_t cp, std::string& out);

// The GPT-2 byte-level alphabet: byte b is written as the UTF-8 of code point
// ByteToCodepoint(b) (printable Latin-1 bytes map to themselves, the other 68
// bytes to U+0100..U+0143 in byte order).
uint32_t ByteToCodepoint(uint8_t b);
// The inverse: the byte whose code point is `cp`, or -1.
int CodepointToByte(uint32_t cp);

}  // namespace ellm::tokenizer

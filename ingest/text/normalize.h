// Character-level clean-up of extracted text: Unicode NFC, ligatures,
// odd spaces and invisible characters, whitespace. Pure functions over
// UTF-8 strings; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ellm::ingest::text {

// Returns `s` as valid UTF-8 in NFC with: invalid bytes -> U+FFFD;
// ligatures U+FB00..U+FB06 -> their letters ("ﬁ" -> "fi"); every Unicode
// space (NBSP, U+2000..U+200A, ideographic space, tab...) -> ' '; U+2010 and
// U+2011 -> '-'; zero-width space, BOM, private-use code points (unmapped
// glyphs) and C0/C1 controls other than '\n' removed. Soft hyphens (U+00AD)
// are kept: the paragraph stage uses them to join words and then drops them.
std::string NormalizeText(std::string_view s);

// Trims every line, collapses runs of spaces to one, keeps at most one blank
// line between paragraphs, and drops leading/trailing blank lines. The
// result is empty or ends with exactly one '\n'.
std::string TidyWhitespace(std::string_view s);

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Code point helpers for the other text stages. REQUIRES: valid UTF-8.
// The first / last code point of `s`, or 0 if `s` is empty.
char32_t FirstCodePoint(std::string_view s);
char32_t LastCodePoint(std::string_view s);
// Han, kana and CJK/full-width punctuation: scripts written without spaces
// between words (Hangul is not: Korean uses spaces).
bool IsCjk(char32_t c);

}  // namespace ellm::ingest::text

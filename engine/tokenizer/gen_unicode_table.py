#!/usr/bin/env python3
"""Generates engine/tokenizer/unicode_data.cc: the code point classes the
pre-tokenizers need and the case and NFD tables of the WordPiece normalizer,
as sorted range tables.

Everything follows llama.cpp's src/unicode-data.cpp (made by its
scripts/gen-unicode-data.py), because our tokenizers must split and
normalize text exactly as llama.cpp's do:
  - one category flag per code point from its general category: Cn -> UNDEFINED,
    Cc/Cf/Co/Cs -> CONTROL, L* -> LETTER, M* -> MARK, N* -> NUMBER,
    P* -> PUNCTUATION, S* -> SYMBOL, Z* -> SEPARATOR;
  - a WHITESPACE bit for llama.cpp's fixed whitespace set (PropList's
    White_Space: U+0009..000D, U+0020, U+0085, U+00A0, U+1680, U+2000..200A,
    U+2028, U+2029, U+202F, U+205F, U+3000), which is \\s in its regexes;
  - unicode_tolower: UnicodeData.txt's simple lowercase mapping, which is
    Python's str.lower() except for U+0130 (full mapping "i" + U+0307, simple
    "i"), so we take the first code point of str.lower();
  - unicode_cpts_normalize_nfd: the FIRST code point of each code point's NFD
    (not a full decomposition: llama.cpp drops the combining marks, and
    Hangul syllables keep only their leading consonant).
The lowercase map is written as runs with a constant offset and a stride of
1 or 2 (upper/lower pairs alternate in many blocks); the NFD map as runs of
consecutive code points with the same first code point, as llama.cpp's own
unicode_ranges_nfd. tests/engine/tokenizer_llama_vocab_test.cc compares all
three tables with llama.cpp's unicode-data.cpp for every code point.

The Unicode version is that of the running Python's unicodedata; it is written
into the file's header. Run with the Python whose version you want (3.13 has
Unicode 15.1.0, the version llama.cpp's table was generated from):

  python3.13 engine/tokenizer/gen_unicode_table.py > engine/tokenizer/unicode_data.cc

Contractions: llama.cpp's rules lower-case only the letter after an apostrophe
in 's 't 're 've 'm 'll 'd. The script checks that no code point outside ASCII
lower-cases to one of those letters, so the pre-tokenizers' ASCII fold there
is exact.
"""

import sys
import unicodedata

MAX_CODEPOINTS = 0x110000

# Bit values shared with unicode.h (cpflag::); llama.cpp's unicode_cpt_flags
# uses the same category bits.
UNDEFINED = 0x001
NUMBER = 0x002
LETTER = 0x004
SEPARATOR = 0x008
MARK = 0x010
PUNCTUATION = 0x020
SYMBOL = 0x040
CONTROL = 0x080
WHITESPACE = 0x100

CATEGORY_FLAG = {
    "Cn": UNDEFINED,
    "Cc": CONTROL, "Cf": CONTROL, "Co": CONTROL, "Cs": CONTROL,
    "Ll": LETTER, "Lm": LETTER, "Lo": LETTER, "Lt": LETTER, "Lu": LETTER,
    "Mc": MARK, "Me": MARK, "Mn": MARK,
    "Nd": NUMBER, "Nl": NUMBER, "No": NUMBER,
    "Pc": PUNCTUATION, "Pd": PUNCTUATION, "Pe": PUNCTUATION, "Pf": PUNCTUATION,
    "Pi": PUNCTUATION, "Po": PUNCTUATION, "Ps": PUNCTUATION,
    "Sc": SYMBOL, "Sk": SYMBOL, "Sm": SYMBOL, "So": SYMBOL,
    "Zl": SEPARATOR, "Zp": SEPARATOR, "Zs": SEPARATOR,
}

WHITESPACE_SET = (list(range(0x0009, 0x000D + 1)) + list(range(0x2000, 0x200A + 1)) +
                  [0x0020, 0x0085, 0x00A0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])

CONTRACTION_LETTERS = set("sterv" "mld")


def flags_of(cp):
    f = CATEGORY_FLAG[unicodedata.category(chr(cp))]
    return f | WHITESPACE if cp in WHITESPACE_SET else f


def check_case_folding():
    for cp in range(0x80, MAX_CODEPOINTS):
        if 0xD800 <= cp < 0xE000:
            continue
        lower = chr(cp).lower()
        if lower[0] in CONTRACTION_LETTERS:
            sys.exit(f"U+{cp:04X} lower-cases to '{lower}': the ASCII fold in the "
                     "contraction rule would be wrong; add a case table")


def lowercase_runs():
    """[(first, count, stride, delta)]: cp = first + k * stride (k < count)
    lower-cases to cp + delta. Greedy over the sorted map, longest run first;
    runs never overlap (a stride-2 run's gaps are not in the map)."""
    pairs = []
    for cp in range(MAX_CODEPOINTS):
        if 0xD800 <= cp < 0xE000:
            continue  # surrogates: chr() works but they have no mapping
        lower = ord(chr(cp).lower()[0])
        if lower != cp:
            pairs.append((cp, lower))
    runs = []
    i = 0
    while i < len(pairs):
        first, delta = pairs[i][0], pairs[i][1] - pairs[i][0]
        best = (1, 1)
        for stride in (1, 2):
            n = 1
            while (i + n < len(pairs) and pairs[i + n][0] == first + n * stride and
                   pairs[i + n][1] - pairs[i + n][0] == delta):
                n += 1
            if n > best[0]:
                best = (n, stride)
        n, stride = best
        assert n < 1 << 16
        runs.append((first, n, stride, delta))
        i += n
    return runs


def nfd_runs():
    """[(first, count, nfd)]: llama.cpp's unicode_ranges_nfd without its
    leading (0, 0, 0) entry."""
    runs = []
    for cp in range(MAX_CODEPOINTS):
        if 0xD800 <= cp < 0xE000:
            continue
        nfd = ord(unicodedata.normalize("NFD", chr(cp))[0])
        if nfd == cp:
            continue
        if runs and runs[-1][0] + runs[-1][1] == cp and runs[-1][2] == nfd:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, nfd)
        else:
            runs.append((cp, 1, nfd))
    assert max(n for _, n, _ in runs) < 1 << 11  # NfdRange::count
    return runs


def write_rows(out, rows, fmt, per_line=None):
    """Writes `rows` with `fmt`, `per_line` to a line, or else as many as fit
    in 100 columns."""
    items = [fmt % r for r in rows]
    line = ""
    for k, item in enumerate(items):
        full = per_line is not None and k % per_line == 0 and k > 0
        if line and (full or len(line) + 1 + len(item) > 100):
            out.write(line + "\n")
            line = ""
        line = "    " + item if not line else line + " " + item
    if line:
        out.write(line + "\n")


def main():
    check_case_folding()
    ranges = []  # (first code point, flags)
    for cp in range(MAX_CODEPOINTS):
        f = flags_of(cp)
        if not ranges or ranges[-1][1] != f:
            ranges.append((cp, f))
    lower = lowercase_runs()
    nfd = nfd_runs()

    out = sys.stdout
    out.write(f"""\
// Code point classes for the pre-tokenizers and the lowercase and NFD maps
// of the WordPiece normalizer (unicode.h).
// GENERATED by engine/tokenizer/gen_unicode_table.py -- do not edit.
// Unicode version {unicodedata.unidata_version} (Python {sys.version.split()[0]} unicodedata);
// {len(ranges)} class ranges, {len(lower)} lowercase runs, {len(nfd)} NFD runs. As
// llama.cpp's src/unicode-data.cpp: one general-category flag per code point
// plus its whitespace bit; unicode_map_lowercase; unicode_ranges_nfd.
#include "tokenizer/unicode.h"

namespace ellm::tokenizer {{

const char kUnicodeVersion[] = "{unicodedata.unidata_version}";

// {{first code point, flags}}: the flags hold until the next entry's first.
// clang-format off
const CodepointRange kCodepointRanges[] = {{
""")
    write_rows(out, ranges, "{0x%06X, 0x%03X},", 5)
    out.write("""\
};

// {first, count, stride, delta}.
const LowercaseRun kLowercaseRuns[] = {
""")
    write_rows(out, lower, "{0x%X, %d, %d, %d},")
    out.write("""\
};

// {first, count, first code point of the NFD}.
const NfdRun kNfdRuns[] = {
""")
    write_rows(out, nfd, "{0x%X, %d, 0x%X},")
    out.write("""\
};
// clang-format on

const size_t kNumCodepointRanges = sizeof(kCodepointRanges) / sizeof(kCodepointRanges[0]);
const size_t kNumLowercaseRuns = sizeof(kLowercaseRuns) / sizeof(kLowercaseRuns[0]);
const size_t kNumNfdRuns = sizeof(kNfdRuns) / sizeof(kNfdRuns[0]);

}  // namespace ellm::tokenizer
""")


if __name__ == "__main__":
    main()

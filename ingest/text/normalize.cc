// Character-level clean-up (see normalize.h). NFC comes from ICU; the
// mappings before it are ours, listed in MapCodePoint.
#include "text/normalize.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

namespace ellm::ingest::text {
namespace {

constexpr char32_t kInvalid = 0xFFFFFFFF;

// Decodes one code point at s[*i] and advances *i; kInvalid (advancing one
// byte) on a malformed sequence.
char32_t Decode(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  int len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (len == 0 || b0 > 0xF4 || *i + len > s.size()) {
    ++*i;
    return kInvalid;
  }
  char32_t c = b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[*i + k]);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return kInvalid;
    }
    c = (c << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
    ++*i;
    return kInvalid;
  }
  *i += len;
  return c;
}

void Append(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool IsSpace(char32_t c) {
  return c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool IsDropped(char32_t c) {
  return (c < 0x20 && c != '\n') || (c >= 0x7F && c < 0xA0) || c == 0x200B || c == 0x2060 ||
         c == 0xFEFF || (c >= 0xE000 && c <= 0xF8FF) || (c >= 0xF0000 && c <= 0x10FFFF);
}

// Appends the replacement for `c`; the single place where characters are mapped.
void MapCodePoint(char32_t c, std::string* out) {
  static constexpr const char* kLigatures[] = {"ff", "fi", "fl", "ffi", "ffl", "st", "st"};
  if (c == kInvalid) {
    Append(0xFFFD, out);
  } else if (c >= 0xFB00 && c <= 0xFB06) {
    *out += kLigatures[c - 0xFB00];
  } else if (IsSpace(c)) {
    out->push_back(' ');
  } else if (c == 0x2010 || c == 0x2011) {
    out->push_back('-');
  } else if (!IsDropped(c)) {
    Append(c, out);
  }
}

std::string Nfc(const std::string& s) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(err);
  if (U_FAILURE(err)) return s;  // ICU data missing: the text is still valid UTF-8
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  if (nfc->isNormalized(u, err) && U_SUCCESS(err)) return s;
  err = U_ZERO_ERROR;
  icu::UnicodeString n = nfc->normalize(u, err);
  if (U_FAILURE(err)) return s;
  std::string out;
  n.toUTF8String(out);
  return out;
}

}  // namespace

std::string NormalizeText(std::string_view s) {
  bool plain = true;  // printable ASCII and '\n' only: already normal
  for (char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x7F || (b < 0x20 && b != '\n')) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(s);
  std::string mapped;
  mapped.reserve(s.size());
  for (size_t i = 0; i < s.size();) MapCodePoint(Decode(s, &i), &mapped);
  return Nfc(mapped);
}

std::string TidyWhitespace(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  int pending_newlines = 0;  // newlines seen since the last text
  bool pending_space = false;
  for (char ch : s) {
    if (ch == '\n') {
      ++pending_newlines;
      pending_space = false;
    } else if (ch == ' ' || ch == '\t' || ch == '\r') {
      pending_space = true;
    } else {
      if (!out.empty()) {
        if (pending_newlines >= 2) {
          out += "\n\n";
        } else if (pending_newlines == 1) {
          out += '\n';
        } else if (pending_space) {
          out += ' ';
        }
      }
      pending_newlines = 0;
      pending_space = false;
      out += ch;
    }
  }
  if (!out.empty()) out += '\n';
  return out;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (Decode(s, &i) == kInvalid) return false;
  }
  return true;
}

char32_t FirstCodePoint(std::string_view s) {
  if (s.empty()) return 0;
  size_t i = 0;
  return Decode(s, &i);
}

char32_t LastCodePoint(std::string_view s) {
  if (s.empty()) return 0;
  size_t start = s.size() - 1;
  while (start > 0 && s.size() - start < 4 &&
         (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
    --start;
  }
  size_t i = start;
  return Decode(s, &i);
}

bool IsCjk(char32_t c) {
  return (c >= 0x2E80 && c <= 0x30FF) ||  // radicals, CJK punctuation, kana
         (c >= 0x3400 && c <= 0x4DBF) ||  // extension A
         (c >= 0x4E00 && c <= 0x9FFF) ||  // unified ideographs
         (c >= 0xF900 && c <= 0xFAFF) ||  // compatibility ideographs
         (c >= 0xFF00 && c <= 0xFF60) ||  // full-width forms
         (c >= 0x20000 && c <= 0x3FFFF);  // extensions B..
}

}  // namespace ellm::ingest::text

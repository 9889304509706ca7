// ASCII case folding for protocol tokens and English words (header names,
// media types, host names, contract keywords); bytes >= 0x80 pass as they
// are, so UTF-8 stays valid.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace ellm {

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace ellm

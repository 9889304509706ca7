// Small text helpers the contract files share (not part of contracts.h).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace ellm::pipelines::contract_words {

inline std::string TrimCopy(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

inline int CountWords(std::string_view s) {
  int n = 0;
  bool in = false;
  for (char c : s) {
    const bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

}  // namespace ellm::pipelines::contract_words

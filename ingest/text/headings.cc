// See headings.h.
#include "text/headings.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace ellm::ingest::text {
namespace {

bool IsRoman(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (std::string_view("IVXLCDM").find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool IsDottedNumber(std::string_view s) {  // "3", "2.1", "4.2.10"
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front())) ||
      !std::isdigit(static_cast<unsigned char>(s.back()))) {
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.' && s[i - 1] == '.') return false;
    if (s[i] != '.' && !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

constexpr std::array<std::string_view, 9> kNumberWords = {
    "article", "section", "clause", "schedule", "part", "chapter", "appendix", "annex", "exhibit"};

bool IsNumberWord(std::string_view w) {
  if (w.size() > 8) return false;
  std::string lower;
  for (char c : w) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view k : kNumberWords) {
    if (lower == k) return true;
  }
  return false;
}

std::string_view StripSeparator(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '-' || s[i] == ':' || s[i] == '.')) ++i;
  if (s.substr(i).rfind("\xE2\x80\x93", 0) == 0 || s.substr(i).rfind("\xE2\x80\x94", 0) == 0) {
    i += 3;  // en or em dash
    while (i < s.size() && s[i] == ' ') ++i;
  }
  return s.substr(i);
}

}  // namespace

std::pair<std::string, std::string> SplitHeadingNumber(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return {"", std::string(text)};
  std::string_view first = text.substr(0, space);
  std::string_view rest = text.substr(space + 1);
  if (IsNumberWord(first)) {
    const size_t end = std::min(rest.find(' '), rest.size());
    std::string_view id = rest.substr(0, end);
    while (!id.empty() && (id.back() == '.' || id.back() == ':')) id.remove_suffix(1);
    const bool single_letter = id.size() == 1 && std::isupper(static_cast<unsigned char>(id[0]));
    if (IsDottedNumber(id) || IsRoman(id) || single_letter) {
      return {std::string(first) + " " + std::string(id),
              std::string(StripSeparator(rest.substr(end)))};
    }
    return {"", std::string(text)};
  }
  std::string_view id = first;
  const bool closed = !id.empty() && (id.back() == '.' || id.back() == ')');
  if (closed) id.remove_suffix(1);
  if (IsDottedNumber(id) || (closed && IsRoman(id))) {
    return {std::string(id), std::string(StripSeparator(rest))};
  }
  return {"", std::string(text)};
}

}  // namespace ellm::ingest::text

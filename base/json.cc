// Bounded JSON parsing (see json.h): the pre-scan and nlohmann's parser
// behind a Status.
#include "ellm/base/json.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace ellm {
namespace {

// nlohmann's what(): "[json.exception.parse_error.101] parse error at line
// 1, column 5: syntax error ..."; the bracketed id means nothing to a user.
std::string Describe(const nlohmann::json::exception& e) {
  std::string_view what = e.what();
  if (!what.empty() && what.front() == '[') {
    const size_t close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  return std::string(what);
}

template <typename Json>
StatusOr<Json> Parse(std::string_view text, const JsonLimits& limits) {
  ELLM_RETURN_IF_ERROR(CheckJsonLimits(text, limits));
  // nlohmann reports where the text breaks only through its exceptions;
  // they stop here (no exceptions across our interfaces).
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError("not valid JSON: " + Describe(e)).WithReason(kJsonSyntax);
  }
}

}  // namespace

Status CheckJsonLimits(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return InvalidArgumentError("JSON text is " + std::to_string(text.size()) +
                                " bytes; the limit is " + std::to_string(limits.max_bytes))
        .WithReason(kJsonTooLarge);
  }
  // The open containers, innermost last: an object's member count, or
  // kArray. At most limits.max_depth entries.
  constexpr size_t kArray = std::numeric_limits<size_t>::max();
  std::vector<size_t> open;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote or not, stays in the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (open.size() >= static_cast<size_t>(std::max(limits.max_depth, 0))) {
          return InvalidArgumentError("JSON nested deeper than " +
                                      std::to_string(limits.max_depth) + " levels at byte " +
                                      std::to_string(i))
              .WithReason(kJsonTooDeep);
        }
        open.push_back(c == '{' ? 0 : kArray);
        break;
      case ']':
      case '}':
        // A closer too many is the parser's syntax error; never let it
        // lower the count below zero and so admit deeper openers after it.
        if (!open.empty()) open.pop_back();
        break;
      case ':':
        if (!open.empty() && open.back() != kArray && ++open.back() > limits.max_object_members) {
          return InvalidArgumentError("JSON object with more than " +
                                      std::to_string(limits.max_object_members) +
                                      " members at byte " + std::to_string(i))
              .WithReason(kJsonTooManyMembers);
        }
        break;
      default:
        break;
    }
  }
  return OkStatus();
}

StatusOr<nlohmann::json> ParseJson(std::string_view text, const JsonLimits& limits) {
  return Parse<nlohmann::json>(text, limits);
}

StatusOr<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, const JsonLimits& limits) {
  return Parse<nlohmann::ordered_json>(text, limits);
}

}  // namespace ellm

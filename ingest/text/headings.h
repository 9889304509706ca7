// Heading text shared by every format's reader: the number a heading is
// written with, split off its title. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace ellm::ingest::text {

// Splits a leading number off a heading's text: "2.1 Fees" -> {"2.1",
// "Fees"}, "ARTICLE V - Term" -> {"ARTICLE V", "Term"}, "IV. Scope" ->
// {"IV", "Scope"}, "Scope" -> {"", "Scope"}. A number's trailing '.' or ')'
// is dropped.
std::pair<std::string, std::string> SplitHeadingNumber(std::string_view text);

}  // namespace ellm::ingest::text

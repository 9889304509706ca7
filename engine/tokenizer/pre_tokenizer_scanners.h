// Hand-written scanners that llama.cpp runs instead of std::regex for some
// pre-tokenizer expressions (unicode.cpp, unicode_regex_split_custom): where
// one exists, llama.cpp's result is the scanner's, so ours follow the
// scanners line for line rather than the expression.
//
// Thread safety: stateless.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ellm::tokenizer {

// Appends the lengths in code points (each > 0) of the words of one piece of
// text, summing to cps.size(). flags[i] is CodepointFlags(cps[i]).
using Scanner = void (*)(std::span<const uint32_t> cps, std::span<const uint16_t> flags,
                         std::vector<uint32_t>& lengths);

// The scanner llama.cpp uses for exactly the expression `expr`, or nullptr.
Scanner FindScanner(std::string_view expr);

}  // namespace ellm::tokenizer

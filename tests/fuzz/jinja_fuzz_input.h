// The body of the Jinja fuzz target (jinja_fuzz.cc), shared with the unit
// test that replays its committed corpus (tests/engine/chat/
// jinja_corpus_test.cc), so that both run every input the same way.
#pragma once

#include <string>
#include <string_view>

namespace ellm::jinja {

// Lexes and parses `source` as a chat template and, when it parses, renders
// it for a small conversation with tools (and for one without), under the
// limits of jinja_limits.h with a step budget small enough for fuzzing.
// Returns "" when every promise held: nothing thrown, every error a Status
// with a message, a bound's error RESOURCE_EXHAUSTED with kLimitReason,
// output within its bound; else what broke.
std::string CheckJinjaFuzzInput(std::string_view source);

}  // namespace ellm::jinja

// A pushdown automaton over bytes that accepts exactly the JSON texts a
// compiled Schema allows: what the constrained decoder (token_constraint.h)
// runs every candidate token's bytes through. Nondeterministic where the
// schema is (anyOf, a literal that is a prefix of another, where a number
// ends): a state is a set of stacks, and a byte maps a set to a set; an
// empty set means the text can no longer become valid.
//
// Whitespace between structural characters follows llama.cpp's rule for
// JSON-schema grammars (common/json-schema-to-grammar.cpp, SPACE_RULE):
// nothing, one space, or one or two newlines then up to 20 spaces or tabs;
// never before the value or after it. So a model cannot stall in
// whitespace. Numbers have at most kMaxNumberChars characters.
//
// Framed (Framing::open non-empty), the text is instead one or more blocks
// `open` value `close`, as a model's native tool calls are written
// (`<tool_call>\n{...}\n</tool_call>`): the tags byte for byte, the
// structural whitespace rule between blocks, between min and max blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/json_schema.h"

namespace ellm::grammar {

struct Frame {
  int32_t node = -1;  // -1: the document around the root value
  uint8_t phase = 0;
  int32_t count = 0;  // next property / items so far / code points / number chars
  int32_t pos = 0;    // bytes of a key or literal matched so far
  uint64_t mask = 0;  // candidate properties or literals
  bool operator==(const Frame&) const = default;
};

struct Stack {
  std::vector<Frame> frames;
  // Structural whitespace since the last other byte: 0 none, 1 one space,
  // 2 / 3 one / two newlines, 3 + k: k spaces or tabs after them.
  int32_t ws = 0;
  bool operator==(const Stack&) const = default;
};

using StateSet = std::vector<Stack>;

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF),
// as JSON parsers check it. Utf8Follow: the continuation bytes after a lead
// byte, 0 for a byte that cannot lead. Utf8ContinuationOk: whether c may
// follow; `lead` is the lead byte for the second byte (whose range is
// narrower after E0, ED, F0, F4), 0 for later ones.
int Utf8Follow(unsigned char lead);
bool Utf8ContinuationOk(unsigned char lead, unsigned char c);
bool IsWholeUtf8(std::string_view s);

// Where the documents sit in the text; empty `open`: one bare document.
struct Framing {
  std::string open, close;  // both non-empty when framed
  int32_t min_blocks = 1;
  int32_t max_blocks = 1;  // -1: no bound
};

class JsonMatcher {
 public:
  static constexpr int kMaxIndent = 20;
  static constexpr int kMaxNumberChars = 40;
  static constexpr size_t kMaxStacks = 64;

  explicit JsonMatcher(const Schema& schema, Framing framing = {});

  StateSet Start() const;
  // Every state reachable from `in` by the byte c (deduplicated) into `out`.
  void Step(const StateSet& in, unsigned char c, StateSet& out) const;
  // Whether the bytes so far form a complete document.
  bool CanEnd(const StateSet& s) const;
  // CanEnd, and no byte may follow but where a bare root number could go
  // on (the decoder ends there all the same): framed, max_blocks are whole.
  bool MustEnd(const StateSet& s) const;
  // When every stack is inside a free string (no shape): the fewest code
  // points any of them may still add (-1: no bound); else -2.
  int64_t FreeStringRoom(const StateSet& s) const;

 private:
  void StepOne(Stack s, unsigned char c, StateSet& out) const;
  void StepFramed(Stack& s, unsigned char c, StateSet& out) const;
  void Push(Stack s, int node, unsigned char c, StateSet& out) const;
  void Pop(Stack s, StateSet& out) const { s.frames.pop_back(), out.push_back(std::move(s)); }
  void StepObject(Stack& s, unsigned char c, StateSet& out) const;
  void StepArray(Stack& s, unsigned char c, StateSet& out) const;
  void StepString(Stack& s, unsigned char c, StateSet& out) const;
  void StepNumber(Stack& s, unsigned char c, StateSet& out) const;
  void StepLiterals(Stack& s, unsigned char c, StateSet& out) const;
  uint64_t KeyCandidates(const SchemaNode& n, int from) const;
  static bool RequiredLeft(const SchemaNode& n, int from);

  std::vector<SchemaNode> nodes_;  // the schema's, plus a free string for keys
  int root_;
  int key_node_;
  Framing framing_;
};

}  // namespace ellm::grammar

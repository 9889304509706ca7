// The one way ellm reads JSON text: bounded in size and nesting depth
// before any recursive code touches it.
//
// nlohmann::json parses without recursion, but copying, comparing, dumping
// and walking a value (ours: schemas, tools, chat template contexts) recurse
// once per level of nesting, so a body of 2,000,000 '[' exhausts a thread's
// stack. CheckJsonLimits scans the text once, without recursion, and
// rejects it before a DOM exists; ParseJson / ParseOrderedJson check and
// then parse, converting nlohmann's exceptions into a Status. Every parse of
// text from outside the process (HTTP bodies and form fields, Kafka
// messages, schemas, tool definitions and tool-call arguments, pipeline
// params, model replies, the extractor's messages, CLI input) goes through
// here; call nlohmann's parse directly only on text of fixed shape we wrote.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "ellm/base/status.h"

namespace ellm {

// Why 64: real documents, JSON Schemas and tool parameters nest a handful of
// levels (OpenAI's structured outputs allow 10 levels of schema nesting);
// our generated tool-call schemas wrap a client's parameters in about a
// dozen more. 64 leaves room for both, while the deepest recursion it lets
// through (a dump, a copy, the schema compiler, a Jinja value) costs a few
// tens of kilobytes of stack, far below the smallest thread stack we run on.
inline constexpr int kMaxJsonDepth = 64;
// Schemas we build ourselves around a client's (ToolReplySchema wraps tool
// parameters up to kMaxJsonDepth deep) are read with twice the limit.
inline constexpr int kMaxGeneratedJsonDepth = 2 * kMaxJsonDepth;
// The largest text any door reads; doors with a tighter bound of their own
// (an HTTP body, a Kafka message) check that first.
inline constexpr size_t kMaxJsonBytes = size_t{64} << 20;
// Members of any one object. nlohmann::ordered_json (which the API reads
// tools and schemas into, to keep their keys' order) finds each key by a
// linear search, so an object of n members costs n²/2 comparisons to read:
// one 10 MB object of short keys would keep a thread busy for many minutes.
// Real objects (params, schemas' properties, documents' metadata) have tens
// of members.
inline constexpr size_t kMaxJsonObjectMembers = 4096;

struct JsonLimits {
  // Arrays and objects open at once; the outermost counts as level 1 and a
  // scalar at the top level is level 0.
  int max_depth = kMaxJsonDepth;
  size_t max_bytes = kMaxJsonBytes;
  size_t max_object_members = kMaxJsonObjectMembers;
};

// Stable reasons (Status::reason) of the errors below; append-only.
inline constexpr const char* kJsonTooDeep = "json.too_deep";
inline constexpr const char* kJsonTooLarge = "json.too_large";
inline constexpr const char* kJsonSyntax = "json.syntax";
inline constexpr const char* kJsonTooManyMembers = "json.too_many_members";

// OK when `text` is at most limits.max_bytes long, no '[' or '{' outside a
// string opens level limits.max_depth + 1, and no object has more than
// limits.max_object_members members (its ':'s). Does not check the syntax
// otherwise (a parser does); brackets and colons inside strings, escaped
// quotes included, do not count. Linear time, no recursion, space in
// proportion to the depth reached. Errors (INVALID_ARGUMENT, permanent):
//   "JSON nested deeper than 64 levels at byte 68" (0-based offset of the
//   bracket that opens level 65), reason kJsonTooDeep;
//   "JSON text is N bytes; the limit is M", reason kJsonTooLarge;
//   "JSON object with more than 4096 members at byte N" (the ':' of member
//   4097), reason kJsonTooManyMembers.
Status CheckJsonLimits(std::string_view text, const JsonLimits& limits = {});

// CheckJsonLimits, then the whole of `text` as one JSON value. A syntax
// error is INVALID_ARGUMENT "not valid JSON: <nlohmann's description, with
// line and column>", reason kJsonSyntax.
StatusOr<nlohmann::json> ParseJson(std::string_view text, const JsonLimits& limits = {});
// The same, keeping objects' keys in the order the text gives them.
StatusOr<nlohmann::ordered_json> ParseOrderedJson(std::string_view text,
                                                  const JsonLimits& limits = {});

}  // namespace ellm

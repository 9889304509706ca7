// A JSON Schema compiled into the nodes the constrained decoder walks
// (json_matcher.h). The subset real extraction schemas use: type (one or a
// list), object (properties, required, additionalProperties), array (items,
// minItems, maxItems), string (minLength, maxLength, format "date"), number,
// integer (minimum >= 0 forbids a sign), boolean, null, enum, const,
// anyOf/oneOf, local $ref (#/$defs/..., #/definitions/...), and {} / true
// for any value. Anything else (pattern, if/then, allOf, ...) is refused
// with the keyword and where it is, never ignored.
//
// Properties are generated in the order the schema declares them; an
// optional one may be left out, a required one may not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::grammar {

enum class NodeKind {
  kObject,    // properties in order; or any keys (additional) when it has none
  kArray,     // items
  kString,    // free text, or a fixed shape (format)
  kNumber,    // JSON number
  kInteger,   // -?(0|[1-9][0-9]*)
  kLiterals,  // one of these exact JSON texts (enum, const, true, false, null)
  kAnyOf,     // one of the alternatives
};

struct SchemaNode {
  NodeKind kind = NodeKind::kLiterals;
  // kObject
  std::vector<std::string> property_names;  // JSON-encoded, with quotes
  std::vector<int> property_nodes;
  std::vector<bool> property_required;
  int additional = -1;  // value node for free keys (an object without properties)
  // kArray
  int items = -1;
  int64_t min_items = 0, max_items = -1;  // -1: no bound
  // kString (lengths in code points)
  int64_t min_length = 0, max_length = -1;
  std::string shape;  // non-empty: exactly this shape, 'd' a digit ("dddd-dd-dd")
  // kNumber / kInteger
  bool non_negative = false;
  // kLiterals
  std::vector<std::string> literals;
  // kAnyOf
  std::vector<int> alternatives;
};

class Schema {
 public:
  // Parses a JSON Schema document. INVALID_ARGUMENT for malformed JSON or a
  // malformed schema; UNIMPLEMENTED naming a keyword we do not enforce.
  static StatusOr<Schema> Parse(std::string_view json_text);
  // A schema that accepts any JSON object (response_format json_object).
  static Schema AnyObject();

  const std::vector<SchemaNode>& nodes() const { return nodes_; }
  int root() const { return root_; }

 private:
  friend class SchemaCompiler;
  std::vector<SchemaNode> nodes_;
  int root_ = -1;
};

}  // namespace ellm::grammar

// Grammar-constrained decoding: the model may only write text that a JSON
// Schema allows. Before each token is sampled, every vocabulary entry that
// would make the text so far impossible to complete as a valid document gets
// -infinity; end of generation is allowed only when the document is
// complete, and then it is the only choice. So an output that must be JSON
// always parses and validates against the schema (the subset in
// engine/grammar/json_schema.h), with any tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "ellm/engine/tokenizer.h"

namespace ellm {

namespace grammar {
class Schema;
class ConstraintImpl;
}  // namespace grammar

// Whether `schema_json` is a JSON Schema that constrained decoding can
// enforce (the same errors as FromSchema), without a tokenizer: for configs
// and pipeline files checked before a model is loaded.
Status ValidateJsonSchema(std::string_view schema_json);

// JSON documents inside tags, as a model's native tool calls are written:
// one or more blocks `open` document `close` (Hermes / Qwen 2.5:
// "<tool_call>\n" {"name": ..., "arguments": {...}} "\n</tool_call>"), the
// tags byte for byte, whitespace between blocks as between JSON tokens.
struct TaggedJson {
  std::string open, close;  // non-empty
  int32_t min_blocks = 1;   // >= 1
  int32_t max_blocks = 1;   // >= min_blocks, or -1: no bound
  // Non-empty (a prefix of `open`): lazy, as llama.cpp's grammar triggers.
  // The text is free until it contains the trigger; from the trigger on it
  // must be blocks as above (a token that would put a broken block after
  // the trigger is refused), and the text may end anywhere before it.
  std::string trigger;
};

class JsonConstraint {
 public:
  // INVALID_ARGUMENT / UNIMPLEMENTED for a schema we cannot enforce, naming
  // the keyword and where it is. The tokenizer must outlive the constraint.
  static StatusOr<std::unique_ptr<JsonConstraint>> FromSchema(std::string_view schema_json,
                                                              const Tokenizer& tokenizer);
  // Documents of the schema inside tags. INVALID_ARGUMENT also for tags
  // that break TaggedJson's rules.
  static StatusOr<std::unique_ptr<JsonConstraint>> FromSchemaInTags(std::string_view schema_json,
                                                                    const TaggedJson& tags,
                                                                    const Tokenizer& tokenizer);
  // Any JSON object (OpenAI's response_format {"type": "json_object"}).
  static std::unique_ptr<JsonConstraint> AnyObject(const Tokenizer& tokenizer);
  ~JsonConstraint();

  // Sets the logits of every token not allowed next to -infinity and
  // returns how many remain allowed (0: the vocabulary cannot continue the
  // document; the caller must stop). logits: [vocab_size].
  size_t Mask(std::span<float> logits) const;
  // Advances past `id`. FAILED_PRECONDITION when `id` was not allowed.
  Status Accept(TokenId id);
  // The text accepted so far is a complete document (or blocks; lazy: free
  // text that has not reached the trigger).
  bool Complete() const;
  // Complete, and only end of generation may follow: the decoder stops.
  bool Finished() const;
  // Starts over (a new document).
  void Reset();

 private:
  explicit JsonConstraint(std::unique_ptr<grammar::ConstraintImpl> impl);
  std::unique_ptr<grammar::ConstraintImpl> impl_;
};

}  // namespace ellm

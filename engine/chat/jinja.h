// A Jinja interpreter of our own for the chat templates that GGUF files carry
// (tokenizer.chat_template), equal byte for byte to Python's jinja2 as
// Hugging Face's apply_chat_template configures it: trim_blocks,
// lstrip_blocks, loop controls, an immutable sandbox, and the globals
// raise_exception, strftime_now, range, namespace and dict. What it covers:
// if/elif/else, for (with else, an `if` filter, unpacking and `loop`), set
// (plain, unpacking, namespace attributes, blocks), macro, filter blocks,
// break/continue, {% generation %}; Python's operators, literals, slicing
// and the str/dict/list methods templates call; the filters and tests of
// jinja_filters.cc. Anything else is an error naming the construct and the
// template line, never a silent guess (engine/chat/README.md).
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_limits.h"
#include "chat/jinja_value.h"
#include "ellm/base/status.h"

namespace ellm::jinja {

struct Stmt;

struct RenderOptions {
  // strftime_now(format): the current local time formatted as C's strftime
  // does. Injected so that tests can fix the clock.
  std::function<std::string(const std::string& format)> strftime_now;
  // Bounds that keep a hostile template from running away
  // (jinja_limits.h says why each has its value); tests lower them.
  int64_t max_steps = kMaxSteps;
  int64_t max_iterations = kMaxLoopIterations;  // loop iterations in all
  int max_call_depth = kMaxMacroDepth;          // macro calls nested
  int64_t max_macro_calls = kMaxMacroCalls;     // macro calls in all
  size_t max_output_bytes = kMaxOutputBytes;
  // When set, receives the steps the rendering used (also when it fails).
  int64_t* steps_used = nullptr;
};

// Status::reason() of an error that a bound of jinja_limits.h stopped.
inline constexpr const char* kLimitReason = "chat_template.limit";

class Template {
 public:
  // INVALID_ARGUMENT naming the line and construct on a syntax error;
  // RESOURCE_EXHAUSTED (reason kLimitReason) naming the bound when the
  // source is too big or nests too deeply (jinja_limits.h).
  static StatusOr<Template> Parse(std::string_view source);

  // Renders with `context`'s keys as variables (messages, bos_token, ...).
  // INVALID_ARGUMENT "line N: ..." when the template raises (its own
  // raise_exception) or uses something this interpreter does not support;
  // RESOURCE_EXHAUSTED (reason kLimitReason) "line N: ..." naming the bound
  // it hit: the step budget, an integer overflow, a string, list or nesting
  // bound. Never throws.
  StatusOr<std::string> Render(const Object& context, const RenderOptions& options) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// C's strftime of `tm` (a format longer than 255 bytes of output: empty).
std::string Strftime(const std::string& format, const std::tm& tm);
// strftime_now from the system clock (local time).
std::string StrftimeNow(const std::string& format);

}  // namespace ellm::jinja

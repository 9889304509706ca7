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

#include "chat/jinja_value.h"
#include "ellm/base/status.h"

namespace ellm::jinja {

struct Stmt;

struct RenderOptions {
  // strftime_now(format): the current local time formatted as C's strftime
  // does. Injected so that tests can fix the clock.
  std::function<std::string(const std::string& format)> strftime_now;
  // Bounds that keep a hostile template from running away: the number of
  // loop iterations in all, nested macro calls, and the output size.
  int64_t max_iterations = 1'000'000;
  int max_call_depth = 64;
  size_t max_output_bytes = 64u << 20;
};

class Template {
 public:
  // INVALID_ARGUMENT naming the line and construct on a syntax error.
  static StatusOr<Template> Parse(std::string_view source);

  // Renders with `context`'s keys as variables (messages, bos_token, ...).
  // INVALID_ARGUMENT "line N: ..." when the template raises (its own
  // raise_exception) or uses something this interpreter does not support.
  StatusOr<std::string> Render(const Object& context, const RenderOptions& options) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// C's strftime of `tm` (a format longer than 255 bytes of output: empty).
std::string Strftime(const std::string& format, const std::tm& tm);
// strftime_now from the system clock (local time).
std::string StrftimeNow(const std::string& format);

}  // namespace ellm::jinja

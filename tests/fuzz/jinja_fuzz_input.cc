#include "jinja_fuzz_input.h"

#include <exception>

#include "chat/jinja.h"

namespace ellm::jinja {
namespace {

// Fuzzing runs many inputs a second: a budget a twentieth of the real one
// still lets every real template render (they take under 5,000 steps).
constexpr int64_t kFuzzSteps = kMaxSteps / 20;

Value Message(const char* role, const char* content) {
  Object m;
  m.Set("role", role);
  m.Set("content", content);
  return m;
}

// As ChatTemplate::Apply gives a conversation to a template.
Object Context(bool with_tools) {
  Array messages = {Message("system", "Be brief."), Message("user", "Weather in Paris?")};
  if (with_tools) {
    Object args;
    args.Set("city", "Paris");
    Object function;
    function.Set("name", "get_weather");
    function.Set("arguments", std::move(args));
    Object call;
    call.Set("id", "call_1");
    call.Set("type", "function");
    call.Set("function", std::move(function));
    Object assistant;
    assistant.Set("role", "assistant");
    assistant.Set("content", Value::None());
    assistant.Set("tool_calls", Array{Value(std::move(call))});
    messages.emplace_back(std::move(assistant));
    Object tool;
    tool.Set("role", "tool");
    tool.Set("content", "18 C");
    tool.Set("tool_call_id", "call_1");
    tool.Set("name", "get_weather");
    messages.emplace_back(std::move(tool));
  } else {
    messages.push_back(Message("assistant", "Sunny."));
    messages.push_back(Message("user", "And tomorrow?"));
  }
  Object ctx;
  ctx.Set("messages", std::move(messages));
  ctx.Set("add_generation_prompt", true);
  ctx.Set("bos_token", "<s>");
  ctx.Set("eos_token", "</s>");
  if (with_tools) {
    Object city;
    city.Set("type", "string");
    Object properties;
    properties.Set("city", std::move(city));
    Object parameters;
    parameters.Set("type", "object");
    parameters.Set("properties", std::move(properties));
    parameters.Set("required", Array{Value("city")});
    Object function;
    function.Set("name", "get_weather");
    function.Set("description", "The weather in a city");
    function.Set("parameters", std::move(parameters));
    Object tool;
    tool.Set("type", "function");
    tool.Set("function", std::move(function));
    ctx.Set("tools", Array{Value(std::move(tool))});
  }
  return ctx;
}

std::string CheckError(const Status& s) {
  if (s.message().empty()) return "an error without a message";
  const bool limit = s.code() == StatusCode::kResourceExhausted;
  if (limit != (s.reason() == kLimitReason))
    return "a limit error without its reason: " + s.ToString();
  if (!limit && s.code() != StatusCode::kInvalidArgument)
    return "an unexpected code: " + s.ToString();
  return "";
}

}  // namespace

std::string CheckJinjaFuzzInput(std::string_view source) {
  try {
    auto t = Template::Parse(source);
    if (!t.ok()) return CheckError(t.status());
    RenderOptions options;
    options.max_steps = kFuzzSteps;
    options.strftime_now = [](const std::string& format) {
      return format.size() > 64 ? std::string() : "26 Mar 2026";
    };
    for (const bool tools : {false, true}) {
      auto text = t->Render(Context(tools), options);
      if (!text.ok()) {
        if (std::string e = CheckError(text.status()); !e.empty()) return e;
        continue;
      }
      if (text->size() > options.max_output_bytes) return "output past its bound";
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("an exception escaped: ") + e.what();
  } catch (...) {
    return "an exception escaped";
  }
}

}  // namespace ellm::jinja

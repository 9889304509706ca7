// ChatTemplate: a model's chat template, Jinja (engine/chat/jinja.h) or one
// of the built-in formats (chat.cc).
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/jinja.h"
#include "ellm/base/json.h"
#include "ellm/engine/chat.h"

namespace ellm {
namespace {

StatusOr<std::string> ReadTemplateFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  // InvalidArgument, not NotFound: the path is a setting the user gave.
  if (!f) return InvalidArgumentError("chat template file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// JSON into the template's values, objects keeping their keys' order (as
// Python's dicts do, so `tojson` prints them as jinja2 would).
// REQUIRES: j came through ParseOrderedJson (nesting within kMaxJsonDepth,
// plus a tool call's arguments: well within jinja::kMaxValueDepth).
jinja::Value FromJson(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null:
      return jinja::Value::None();
    case T::boolean:
      return jinja::Value(j.get<bool>());
    case T::number_integer:
    case T::number_unsigned:
      return jinja::Value(j.get<int64_t>());
    case T::number_float:
      return jinja::Value(j.get<double>());
    case T::string:
      return jinja::Value(j.get<std::string>());
    case T::array: {
      jinja::Array a;
      for (const auto& x : j) a.push_back(FromJson(x));
      return a;
    }
    default: {
      jinja::Object o;
      for (const auto& [k, v] : j.items()) o.Set(k, FromJson(v));
      return o;
    }
  }
}

// A message's tool_calls for the template: each call's "arguments", when
// it is the text of a JSON object, parsed into it.
// Both texts come from a client: FromJson recurses, so they are parsed
// within ParseOrderedJson's limits (arguments past them stay text).
StatusOr<jinja::Value> ToolCalls(const std::string& text) {
  StatusOr<nlohmann::ordered_json> calls = ParseOrderedJson(text);
  if (!calls.ok()) return calls.status().WithContext("a message's tool_calls");
  if (!calls->is_array()) return InvalidArgumentError("a message's tool_calls is not a JSON array");
  for (auto& call : *calls) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
    auto& f = call["function"];
    if (!f.contains("arguments") || !f["arguments"].is_string()) continue;
    StatusOr<nlohmann::ordered_json> args = ParseOrderedJson(f["arguments"].get<std::string>());
    if (args.ok() && args->is_object()) f["arguments"] = std::move(*args);
  }
  return FromJson(*calls);
}

// Whether the template source names the variable `tools` (a word, not part
// of another name such as `tools_in_user_message`'s prefix match).
bool MentionsTools(std::string_view source) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = source.find("tools"); at != std::string_view::npos;
       at = source.find("tools", at + 1)) {
    const bool starts = at == 0 || !word(source[at - 1]);
    const bool ends = at + 5 >= source.size() || !word(source[at + 5]);
    if (starts && ends) return true;
  }
  return false;
}

// A small conversation of every kind a template meets: with a system
// prompt, ending on the user or on the assistant, and (for templates that
// read `tools`) a tool call and its answer.
struct SampleConversation {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt;
  std::string tools;
};

std::vector<SampleConversation> SampleConversations(bool with_tools) {
  const ChatMessage system{.role = "system", .content = "You are a helpful assistant."};
  const ChatMessage user{.role = "user", .content = "What is the capital of France?"};
  const ChatMessage assistant{.role = "assistant", .content = "Paris."};
  const ChatMessage again{.role = "user", .content = "And of Italy?"};
  std::vector<SampleConversation> out = {
      {{system, user, assistant, again}, true, ""},
      {{user, assistant}, false, ""},
  };
  if (with_tools) {
    const ChatMessage call{
        .role = "assistant",
        .tool_calls = R"([{"id": "call_1", "type": "function", "function": )"
                      R"({"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}])"};
    const ChatMessage answer{
        .role = "tool", .content = "18 C", .tool_call_id = "call_1", .name = "get_weather"};
    const std::string tools =
        R"([{"type": "function", "function": {"name": "get_weather", "description": )"
        R"("The weather in a city", "parameters": {"type": "object", "properties": )"
        R"({"city": {"type": "string"}}, "required": ["city"]}}}])";
    out.push_back({{system, user, call, answer}, true, tools});
  }
  return out;
}

// A template is code from whoever made the file: render it for the sample
// conversations now, so that one that overflows, runs past its step budget
// or outgrows a bound (jinja_limits.h) is refused at load with its reason,
// not at the first request. Errors of the template's own logic (its
// raise_exception for a conversation it does not accept) are left to the
// requests that meet them.
Status DryRun(const ChatTemplate& t) {
  for (const SampleConversation& c : SampleConversations(t.handles_tools())) {
    auto text = t.Apply(c.messages, c.add_generation_prompt, c.tools);
    if (!text.ok() && text.status().reason() == jinja::kLimitReason) {
      return text.status().WithContext("refused by a dry run at load");
    }
  }
  return OkStatus();
}

}  // namespace

bool IsChatTemplateFile(const std::string& spec) {
  return spec.size() > 6 && spec.compare(spec.size() - 6, 6, ".jinja") == 0;
}

Status ValidateChatTemplateSpec(const std::string& spec) {
  if (spec.empty()) return OkStatus();
  if (!IsChatTemplateFile(spec)) return ParseChatFormat(spec).status();
  ELLM_ASSIGN_OR_RETURN(std::string source, ReadTemplateFile(spec));
  return jinja::Template::Parse(source).status().WithContext("'" + spec + "'");
}

StatusOr<ChatTemplate> ChatTemplate::FromJinja(std::string_view source, std::string origin,
                                               const Tokenizer& tokenizer) {
  auto parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) return parsed.status().WithContext(origin);
  ChatTemplate t;
  t.name_ = std::move(origin);
  t.jinja_ = std::make_shared<const jinja::Template>(std::move(*parsed));
  // As llama.cpp (common_chat_templates_init): the texts of BOS and EOS with
  // special tokens rendered.
  if (tokenizer.bos() >= 0) t.bos_token_ = tokenizer.TokenToPiece(tokenizer.bos(), true);
  if (tokenizer.eos() >= 0) t.eos_token_ = tokenizer.TokenToPiece(tokenizer.eos(), true);
  t.strip_bos_ = tokenizer.add_bos();
  t.handles_tools_ = MentionsTools(source);
  t.source_ = std::string(source);
  ELLM_RETURN_IF_ERROR(DryRun(t));
  return t;
}

ChatTemplate ChatTemplate::FromFormat(ChatFormat format) {
  ChatTemplate t;
  t.format_ = format;
  t.name_ = std::string(ChatFormatName(format)) + " (built-in)";
  return t;
}

StatusOr<ChatTemplate> ChatTemplate::FromGguf(const gguf::GgufFile& file,
                                              const Tokenizer& tokenizer, const std::string& spec) {
  if (IsChatTemplateFile(spec)) {
    ELLM_ASSIGN_OR_RETURN(std::string source, ReadTemplateFile(spec));
    return FromJinja(source, spec, tokenizer);
  }
  if (!spec.empty()) {
    ELLM_ASSIGN_OR_RETURN(ChatFormat format, ParseChatFormat(spec));
    return FromFormat(format);
  }
  auto source = file.GetString("tokenizer.chat_template");
  if (source.ok() && !source->empty()) {
    return FromJinja(*source, "tokenizer.chat_template of '" + file.path() + "'", tokenizer);
  }
  ELLM_ASSIGN_OR_RETURN(ChatFormat format, DetectChatFormat(file));
  return FromFormat(format);
}

StatusOr<std::string> ChatTemplate::Apply(const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt,
                                          std::string_view tools) const {
  if (!jinja_) return RenderChat(format_, messages, add_generation_prompt);
  jinja::Array list;
  for (const ChatMessage& m : messages) {
    jinja::Object o;
    o.Set("role", m.role);
    if (m.tool_calls.empty()) {
      o.Set("content", m.content);
    } else {
      o.Set("content", m.content.empty() ? jinja::Value::None() : jinja::Value(m.content));
      ELLM_ASSIGN_OR_RETURN(jinja::Value calls, ToolCalls(m.tool_calls));
      o.Set("tool_calls", std::move(calls));
    }
    if (!m.tool_call_id.empty()) o.Set("tool_call_id", m.tool_call_id);
    if (!m.name.empty()) o.Set("name", m.name);
    list.emplace_back(std::move(o));
  }
  jinja::Object context;
  context.Set("messages", std::move(list));
  context.Set("add_generation_prompt", add_generation_prompt);
  context.Set("bos_token", bos_token_);
  context.Set("eos_token", eos_token_);
  if (!tools.empty()) {
    StatusOr<nlohmann::ordered_json> parsed = ParseOrderedJson(tools);
    if (!parsed.ok()) return parsed.status().WithContext("tools");
    if (!parsed->is_array()) return InvalidArgumentError("tools is not a JSON array");
    context.Set("tools", FromJson(*parsed));
  }
  auto text = jinja_->Render(context, jinja::RenderOptions{});
  if (!text.ok()) return text.status().WithContext(name_);
  if (strip_bos_ && !bos_token_.empty() && text->rfind(bos_token_, 0) == 0) {
    text->erase(0, bos_token_.size());
  }
  return text;
}

}  // namespace ellm

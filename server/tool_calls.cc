#include "ellm/server/tool_calls.h"

#include <cctype>
#include <random>

#include "ellm/base/json.h"
#include "ellm/engine/constraint.h"
#include "ellm/server/openai.h"

namespace ellm::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// OpenAI's rule for function names.
bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

std::optional<ApiError> ParseTool(const ordered_json& t, size_t i, Tool* out) {
  const std::string where = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) return InvalidRequest(where + " must be an object", where);
  if (!t.contains("type") || t["type"] != "function") {
    return InvalidRequest(where + ".type must be \"function\" (the only kind of tool)",
                          where + ".type");
  }
  if (!t.contains("function") || !t["function"].is_object()) {
    return InvalidRequest(where + ".function must be an object", where + ".function");
  }
  const ordered_json& f = t["function"];
  if (!f.contains("name") || !f["name"].is_string() || !ValidName(f["name"].get<std::string>())) {
    return InvalidRequest(where + ".function.name must be 1 to 64 of a-z, A-Z, 0-9, _ and -",
                          where + ".function.name");
  }
  out->name = f["name"].get<std::string>();
  if (f.contains("description") && !f["description"].is_null()) {
    if (!f["description"].is_string()) {
      return InvalidRequest(where + ".function.description must be a string",
                            where + ".function.description");
    }
    out->description = f["description"].get<std::string>();
  }
  out->parameters = {{"type", "object"}, {"properties", ordered_json::object()}};
  if (f.contains("parameters") && !f["parameters"].is_null()) {
    const ordered_json& p = f["parameters"];
    if (!p.is_object() || (p.contains("type") && p["type"] != "object")) {
      return InvalidRequest(
          where + ".function.parameters must be a JSON Schema of an object (\"type\": \"object\")",
          where + ".function.parameters");
    }
    out->parameters = p;
  }
  out->enforceable = ValidateJsonSchema(out->parameters.dump()).ok();
  return std::nullopt;
}

// What the model is told, beside the tools, about the JSON it must write.
std::string Instruction(const ToolRequest& r) {
  switch (r.choice) {
    case ToolChoice::kRequired:
      return "Respond in JSON format with `tool_calls`: the tools to call and their arguments.";
    case ToolChoice::kFunction:
      return "Respond in JSON format with `tool_calls`: a call of the tool `" + r.function +
             "` and its arguments.";
    default:
      return "Respond in JSON format, either with `tool_calls` (a request to call tools) or with "
             "`response` (your reply to the user's request).";
  }
}

// The system message describing the tools, for templates that do not.
std::string ToolsDescription(const ToolRequest& r) {
  ordered_json list = ordered_json::array();
  for (const Tool& t : r.tools) {
    ordered_json f = {{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    f["parameters"] = t.parameters;
    list.push_back(std::move(f));
  }
  ordered_json call = {{"name", "tool_name"}, {"arguments", {{"arg1", "some_value"}}}};
  const ordered_json example = {{"tool_calls", ordered_json::array({call})}};
  return "You can call any of the following tools to satisfy the user's requests: " + list.dump(2) +
         "\n\nExample tool call syntax:\n\n" + example.dump(2) + "\n\n" + Instruction(r);
}

// An assistant's calls (OpenAI's tool_calls JSON text) as the model writes
// them in the generic format.
// REQUIRES: `tool_calls` as ParseToolTurn keeps them.
std::string CallsAsReply(const std::string& tool_calls) {
  ordered_json calls = ordered_json::array();
  StatusOr<ordered_json> kept = ParseOrderedJson(tool_calls);
  if (!kept.ok()) return ordered_json{{"tool_calls", std::move(calls)}}.dump();
  for (const auto& c : *kept) {
    const auto& f = c["function"];
    // The client's text: JSON within the limits, else kept as a string.
    StatusOr<ordered_json> args = ParseOrderedJson(f["arguments"].get<std::string>());
    calls.push_back({{"name", f["name"]}, {"arguments", args.ok() ? *args : f["arguments"]}});
  }
  return ordered_json{{"tool_calls", std::move(calls)}}.dump();
}

// One call: {"name", "arguments"} of a tool the choice allows.
ordered_json CallSchema(const ToolRequest& r) {
  ordered_json alternatives = ordered_json::array();
  for (const Tool& t : r.tools) {
    if (r.choice == ToolChoice::kFunction && t.name != r.function) continue;
    const ordered_json args = t.enforceable ? t.parameters : ordered_json{{"type", "object"}};
    alternatives.push_back({{"type", "object"},
                            {"properties", {{"name", {{"const", t.name}}}, {"arguments", args}}},
                            {"required", ordered_json::array({"name", "arguments"})}});
  }
  return alternatives.size() == 1 ? alternatives[0] : ordered_json{{"anyOf", alternatives}};
}

// Hermes' tags, as its template and Qwen 2.5's write them.
constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::string NewCallId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kHex[rng() % 16];
  return id;
}

}  // namespace

std::optional<ApiError> ParseTools(const ordered_json& body, ToolRequest* out) {
  if (body.contains("tools") && !body["tools"].is_null()) {
    const ordered_json& tools = body["tools"];
    if (!tools.is_array()) return InvalidRequest("tools must be an array of tools", "tools");
    if (tools.size() > 128) return InvalidRequest("tools may hold at most 128 tools", "tools");
    for (size_t i = 0; i < tools.size(); ++i) {
      Tool t;
      if (auto e = ParseTool(tools[i], i, &t)) return e;
      for (const Tool& other : out->tools) {
        if (other.name == t.name) {
          const std::string at = "tools[" + std::to_string(i) + "].function.name";
          return InvalidRequest(at + ": a second tool named '" + t.name + "'", at);
        }
      }
      out->tools.push_back(std::move(t));
    }
    out->tools_json = tools;
  }
  out->choice = out->tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const ordered_json& c = body["tool_choice"];
    if (c.is_string()) {
      const std::string s = c.get<std::string>();
      if (s == "none") {
        out->choice = ToolChoice::kNone;
      } else if (s == "auto" || s == "required") {
        if (out->tools.empty()) {
          return InvalidRequest("tool_choice '" + s + "' needs tools", "tool_choice");
        }
        out->choice = s == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
      } else {
        return InvalidRequest(
            "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": "
            "{\"name\": ...}}; got '" +
                s + "'",
            "tool_choice");
      }
    } else if (c.is_object() && c.value("type", "") == "function" && c.contains("function") &&
               c["function"].is_object() && c["function"].contains("name") &&
               c["function"]["name"].is_string()) {
      out->function = c["function"]["name"].get<std::string>();
      bool known = false;
      for (const Tool& t : out->tools) known |= t.name == out->function;
      if (!known) {
        return InvalidRequest(
            "tool_choice names the function '" + out->function + "', which is not in tools",
            "tool_choice.function.name");
      }
      out->choice = ToolChoice::kFunction;
    } else {
      return InvalidRequest(
          "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": "
          "{\"name\": ...}}",
          "tool_choice");
    }
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean()) {
      return InvalidRequest("parallel_tool_calls must be a boolean", "parallel_tool_calls");
    }
    out->parallel = body["parallel_tool_calls"].get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> ParseToolTurn(const json& m, size_t index,
                                      const std::vector<ChatMessage>& earlier, ChatMessage* out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (out->role == "tool") {
    if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string() ||
        m["tool_call_id"].get<std::string>().empty()) {
      return InvalidRequest(where + ".tool_call_id is required in a tool message",
                            where + ".tool_call_id");
    }
    out->tool_call_id = m["tool_call_id"].get<std::string>();
    // The assistant message with the calls: the last one before the tool
    // messages that answer it.
    size_t i = earlier.size();
    while (i > 0 && earlier[i - 1].role == "tool") --i;
    bool answers = false;
    StatusOr<json> calls = i > 0 && !earlier[i - 1].tool_calls.empty()
                               ? ParseJson(earlier[i - 1].tool_calls)
                               : StatusOr<json>(json::array());
    if (calls.ok()) {
      for (const auto& c : *calls) {
        if (c["id"] == out->tool_call_id) {
          answers = true;
          if (out->name.empty()) out->name = c["function"]["name"].get<std::string>();
        }
      }
    }
    if (!answers) {
      return InvalidRequest(where + ": a tool message must answer a call ('" + out->tool_call_id +
                                "') of the assistant message with tool_calls before it",
                            where + ".tool_call_id");
    }
    return std::nullopt;
  }
  if (!m.contains("tool_calls") || m["tool_calls"].is_null()) return std::nullopt;
  if (out->role != "assistant") {
    return InvalidRequest(where + ".tool_calls: only assistant messages make tool calls",
                          where + ".tool_calls");
  }
  const json& calls = m["tool_calls"];
  if (!calls.is_array()) {
    return InvalidRequest(where + ".tool_calls must be an array", where + ".tool_calls");
  }
  ordered_json kept = ordered_json::array();
  for (size_t j = 0; j < calls.size(); ++j) {
    const std::string at = where + ".tool_calls[" + std::to_string(j) + "]";
    const json& c = calls[j];
    if (!c.is_object()) return InvalidRequest(at + " must be an object", at);
    if (!c.contains("id") || !c["id"].is_string() || c["id"].get<std::string>().empty()) {
      return InvalidRequest(at + ".id must be a non-empty string", at + ".id");
    }
    if (c.contains("type") && c["type"] != "function") {
      return InvalidRequest(at + ".type must be \"function\"", at + ".type");
    }
    if (!c.contains("function") || !c["function"].is_object()) {
      return InvalidRequest(at + ".function must be an object", at + ".function");
    }
    const json& f = c["function"];
    if (!f.contains("name") || !f["name"].is_string()) {
      return InvalidRequest(at + ".function.name must be a string", at + ".function.name");
    }
    if (!f.contains("arguments") || !f["arguments"].is_string()) {
      return InvalidRequest(at + ".function.arguments must be a string (JSON text)",
                            at + ".function.arguments");
    }
    kept.push_back({{"id", c["id"].get<std::string>()},
                    {"type", "function"},
                    {"function",
                     {{"name", f["name"].get<std::string>()},
                      {"arguments", f["arguments"].get<std::string>()}}}});
  }
  if (!kept.empty()) out->tool_calls = kept.dump();
  return std::nullopt;
}

std::string ToolReplySchema(const ToolRequest& r) {
  ordered_json calls = {{"type", "array"}, {"items", CallSchema(r)}, {"minItems", 1}};
  if (!r.parallel) calls["maxItems"] = 1;
  const ordered_json call_reply = {{"type", "object"},
                                   {"properties", {{"tool_calls", calls}}},
                                   {"required", ordered_json::array({"tool_calls"})}};
  if (r.choice != ToolChoice::kAuto) return call_reply.dump();
  const ordered_json text_reply = {{"type", "object"},
                                   {"properties", {{"response", {{"type", "string"}}}}},
                                   {"required", ordered_json::array({"response"})}};
  return ordered_json{{"anyOf", ordered_json::array({call_reply, text_reply})}}.dump();
}

ToolSyntax DetectToolSyntax(const ChatTemplate& tmpl) {
  return tmpl.handles_tools() && tmpl.source().find(kCallOpen) != std::string::npos
             ? ToolSyntax::kHermes
             : ToolSyntax::kGeneric;
}

std::string ToolCallSchema(const ToolRequest& r) { return CallSchema(r).dump(); }

TaggedJson HermesToolTags(const ToolRequest& r) {
  TaggedJson tags;
  tags.open = std::string(kCallOpen) + "\n";
  tags.close = "\n" + std::string(kCallClose);
  tags.min_blocks = 1;
  tags.max_blocks = r.parallel ? -1 : 1;
  if (r.choice == ToolChoice::kAuto) tags.trigger = std::string(kCallOpen);
  return tags;
}

std::vector<ChatMessage> ToolMessages(const std::vector<ChatMessage>& messages,
                                      const ToolRequest& r, bool template_handles_tools,
                                      ToolSyntax syntax) {
  std::vector<ChatMessage> out;
  // Whether out.back() came from a tool message (and may take more text).
  bool last_from_tool = false;
  for (const ChatMessage& m : messages) {
    if (template_handles_tools) {
      out.push_back(m);
      continue;
    }
    if (m.role == "tool") {
      const std::string result = ordered_json{
          {"tool_response",
           {{"tool_call_id", m.tool_call_id},
            {"name", m.name},
            {"content", m.content}}}}.dump();
      // Several results (or a result and the user's next words) are one
      // user turn: templates such as Gemma's insist that roles alternate.
      if (!out.empty() && out.back().role == "user" && last_from_tool) {
        out.back().content += "\n" + result;
      } else {
        out.push_back({"user", result});
      }
      last_from_tool = true;
      continue;
    }
    if (m.role == "user" && last_from_tool && !out.empty() && out.back().role == "user") {
      out.back().content += "\n\n" + m.content;
      last_from_tool = false;
      continue;
    }
    last_from_tool = false;
    if (!m.tool_calls.empty()) {
      const std::string reply = CallsAsReply(m.tool_calls);
      out.push_back({"assistant", m.content.empty() ? reply : m.content + "\n" + reply});
      continue;
    }
    out.push_back({m.role, m.content});
  }
  if (!r.active() || syntax == ToolSyntax::kHermes) return out;
  const std::string system = template_handles_tools ? Instruction(r) : ToolsDescription(r);
  if (!out.empty() && out.front().role == "system") {
    out.front().content += "\n\n" + system;
  } else {
    out.insert(out.begin(), ChatMessage{"system", system});
  }
  return out;
}

ToolReply ParseToolReply(const std::string& reply) {
  ToolReply out;
  out.text = reply;
  // Arguments keep the order the model wrote them in.
  const StatusOr<ordered_json> parsed = ParseOrderedJson(reply);
  if (!parsed.ok()) {
    // Cut short (max_tokens) inside {"response": "...: the text so far.
    std::string cut = reply;
    if (!cut.empty() && cut.back() == '\\') cut.pop_back();
    const StatusOr<ordered_json> closed = ParseOrderedJson(cut + "\"}");
    if (closed.ok() && closed->is_object() && closed->contains("response") &&
        (*closed)["response"].is_string()) {
      out.text = (*closed)["response"].get<std::string>();
    }
    return out;
  }
  const ordered_json& doc = *parsed;
  if (!doc.is_object()) return out;
  if (doc.contains("response") && doc["response"].is_string()) {
    out.ok = true;
    out.text = doc["response"].get<std::string>();
    return out;
  }
  if (!doc.contains("tool_calls") || !doc["tool_calls"].is_array()) return out;
  for (const auto& c : doc["tool_calls"]) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return out;
    out.calls.push_back({NewCallId(), c["name"].get<std::string>(),
                         c.contains("arguments") ? c["arguments"].dump() : "{}"});
  }
  out.ok = true;
  out.text.clear();
  return out;
}

ToolReply ParseHermesReply(const std::string& reply) {
  ToolReply out;
  std::string text;  // the pieces outside the blocks, trimmed, one per line
  size_t at = 0;
  while (true) {
    const size_t open = reply.find(kCallOpen, at);
    const std::string piece = Trim(
        std::string_view(reply).substr(at, open == std::string::npos ? reply.npos : open - at));
    if (!piece.empty()) text += (text.empty() ? "" : "\n") + piece;
    if (open == std::string::npos) break;
    const size_t body = open + kCallOpen.size();
    const size_t close = reply.find(kCallClose, body);
    // Arguments keep the order the model wrote them in.
    StatusOr<ordered_json> parsed = close == std::string::npos
                                        ? StatusOr<ordered_json>(ordered_json())
                                        : ParseOrderedJson(reply.substr(body, close - body));
    const ordered_json call = parsed.ok() ? std::move(*parsed) : ordered_json();
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string() ||
        (call.contains("arguments") && !call["arguments"].is_object() &&
         !call["arguments"].is_string())) {
      return ToolReply{false, {}, reply};
    }
    std::string args = "{}";
    if (call.contains("arguments")) {
      const ordered_json& a = call["arguments"];
      if (a.is_string()) {
        const StatusOr<ordered_json> inner = ParseOrderedJson(a.get<std::string>());
        if (!inner.ok() || !inner->is_object()) return ToolReply{false, {}, reply};
        args = inner->dump();
      } else {
        args = a.dump();
      }
    }
    out.calls.push_back({NewCallId(), call["name"].get<std::string>(), std::move(args)});
    at = close + kCallClose.size();
  }
  out.ok = true;
  out.text = out.calls.empty() ? reply : text;  // a plain reply as written
  return out;
}

nlohmann::json ToolCallsJson(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls) {
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

}  // namespace ellm::server

// Function calling ("tools") in /v1/chat/completions, in the generic format
// llama.cpp uses for models without one of their own: the model answers
// with one JSON document, grammar-constrained so it always parses,
//   {"tool_calls": [{"name": NAME, "arguments": {...}}, ...]}   or
//   {"response": "text for the user"}                            (auto only)
// where NAME is one of the request's tools and its arguments follow that
// tool's parameters schema. The tools reach the prompt through the chat
// template (`tools`) when it reads them; otherwise a system message
// describes them and the expected JSON, and earlier tool calls and results
// are written into the conversation as that JSON.
//
// A model whose template teaches it a syntax of its own answers in that
// syntax instead (ToolSyntax): Hermes 2 Pro / 3 and Qwen 2.5 write each call
// as a block "<tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>",
// held to the tools by the same constraint (engine TaggedJson), with plain
// text allowed instead under tool_choice auto. Pure functions: no engine.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ellm/engine/chat.h"
#include "ellm/engine/constraint.h"

namespace ellm::server {

struct ApiError;

// How a model writes its calls.
enum class ToolSyntax {
  kGeneric,  // llama.cpp's generic JSON document (above): any model
  kHermes,   // <tool_call> blocks of {"name", "arguments"} JSON (Hermes, Qwen 2.5)
};
// The syntax a chat template teaches: kHermes when it reads `tools` and its
// source writes "<tool_call>" (as llama.cpp recognises the Hermes 2 Pro
// format); else kGeneric (Gemma's, Llama 3.1's, built-ins).
ToolSyntax DetectToolSyntax(const ChatTemplate& tmpl);

enum class ToolChoice {
  kNone,      // answer in text, call nothing
  kAuto,      // call tools or answer, as the model chooses (default with tools)
  kRequired,  // call at least one tool
  kFunction,  // call this one (ToolRequest::function)
};

struct Tool {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;  // a JSON Schema of its arguments object
  // The parameters schema is within what constrained decoding enforces
  // (engine/grammar/json_schema.h); else the arguments are held to be any
  // JSON object.
  bool enforceable = true;
};

struct ToolRequest {
  std::vector<Tool> tools;
  nlohmann::ordered_json tools_json;  // the request's "tools", for the template
  ToolChoice choice = ToolChoice::kNone;
  std::string function;  // kFunction: its name
  bool parallel = true;  // parallel_tool_calls: more than one call per reply
  // The reply is a tool-calling JSON document (tools given, choice not none).
  bool active() const { return choice != ToolChoice::kNone && !tools.empty(); }
};

// Reads "tools", "tool_choice" and "parallel_tool_calls" of a request body
// (parsed keeping key order). Errors name the field at fault.
std::optional<ApiError> ParseTools(const nlohmann::ordered_json& body, ToolRequest* out);

// Checks the messages' tool turns: an assistant message's "tool_calls"
// ([{"id", "type": "function", "function": {"name", "arguments": JSON
// text}}]) and a "tool" message's "tool_call_id", which must answer a call
// of the assistant message before it. `index` is the message's position.
std::optional<ApiError> ParseToolTurn(const nlohmann::json& message, size_t index,
                                      const std::vector<ChatMessage>& earlier, ChatMessage* out);

// The JSON Schema (text) the reply must follow when tools are active.
std::string ToolReplySchema(const ToolRequest& tools);
// The JSON Schema of one call: {"name": a tool (the named one for
// kFunction), "arguments": that tool's parameters}; an anyOf over tools.
std::string ToolCallSchema(const ToolRequest& tools);
// kHermes: where the calls (ToolCallSchema) go. One block, or one or more
// with parallel_tool_calls; under auto lazy from "<tool_call>" (text first,
// or instead: the model chooses), under required / a named function from
// the reply's first byte.
TaggedJson HermesToolTags(const ToolRequest& tools);

// The messages to render when tools are active or the conversation holds
// tool turns. `template_handles_tools`: the template renders tools and tool
// turns itself, so only the instruction on the expected JSON is added to
// the system message; else the tools are described there too and tool
// turns become JSON text (an assistant's calls as it would write them, a
// tool's result as a user message {"tool_response": ...}). kHermes (the
// template handles tools and teaches its own syntax): nothing is added.
std::vector<ChatMessage> ToolMessages(const std::vector<ChatMessage>& messages,
                                      const ToolRequest& tools, bool template_handles_tools,
                                      ToolSyntax syntax = ToolSyntax::kGeneric);

// One call the model made.
struct ToolCall {
  std::string id;         // "call_" + 24 hex digits, unique per call
  std::string name;       // a tool of the request
  std::string arguments;  // JSON text of its arguments object
};
// What the reply's JSON said: calls, or text for the user. `ok` false: it
// did not parse (generation stopped early), `text` is then the raw reply.
struct ToolReply {
  bool ok = false;
  std::vector<ToolCall> calls;
  std::string text;
};
ToolReply ParseToolReply(const std::string& reply);
// A kHermes reply: each "<tool_call>" JSON "</tool_call>" block (whitespace
// around the JSON free; "arguments" an object, or JSON text of one) is a
// call; the text outside the blocks is `text` (each piece trimmed, one a
// line; a reply without blocks as written). A block that does
// not parse (cut by max_tokens, unclosed, not a {"name", "arguments"}
// object) makes the whole reply text: `ok` false, no calls, `text` the
// reply as written.
ToolReply ParseHermesReply(const std::string& reply);

// OpenAI's message.tool_calls: [{"id", "type": "function", "function":
// {"name", "arguments"}}].
nlohmann::json ToolCallsJson(const std::vector<ToolCall>& calls);

}  // namespace ellm::server

// The OpenAI wire format, as ellm's HTTP API speaks it: requests of
// /v1/chat/completions and /v1/completions parsed and checked into our
// types, and the responses, stream chunks and errors built as OpenAI sends
// them. Pure functions: no engine, no sockets (tests/server has them).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/chat.h"
#include "ellm/engine/sampler.h"
#include "ellm/server/tool_calls.h"

namespace ellm::server {

// An error as OpenAI's API reports it: the HTTP status and the body
// {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault, or empty (null)
  std::string code;   // e.g. "context_length_exceeded", or empty (null)
  nlohmann::json ToJson() const;
};

ApiError InvalidRequest(std::string message, std::string param = "", std::string code = "");

// A 400 for JSON from the client that ParseJson refused (ellm/base/json.h),
// `what` naming it ("the request body", "params"): code "json_too_deep"
// past the nesting limit, "json_too_many_members" past the members of one
// object, "request_too_large" past the size limit, else "invalid_json";
// the message is "<what>: <why, naming the limit>".
ApiError JsonError(const Status& refused, const std::string& what, std::string param = "");

enum class ResponseFormat { kText, kJsonObject, kJsonSchema };

struct CompletionRequest {
  bool chat = true;                   // /v1/chat/completions, else /v1/completions
  std::string model;                  // as sent (may be empty)
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions
  std::optional<int64_t> max_tokens;  // unset: what the context leaves
  SamplingOptions sampling;
  bool seeded = false;  // the request gave a seed (else the server draws one)
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  ResponseFormat format = ResponseFormat::kText;
  std::string json_schema;  // kJsonSchema: the schema, as JSON text
  // Chat: logprobs (bool) and top_logprobs (0..20); completions: logprobs
  // (an int 0..5, the alternatives per token).
  bool logprobs = false;
  int top_logprobs = 0;
  int n = 1;          // choices, each its own reply (1..kMaxChoices)
  ToolRequest tools;  // chat: tools, tool_choice, parallel_tool_calls
};
inline constexpr int kMaxChoices = 16;

// Parses a request body. Defaults where the request is silent: OpenAI's
// (temperature 1, top_p 1, n 1), llama.cpp's for what OpenAI lacks (top_k
// 40, min_p 0.05, repeat_penalty 1). Unknown fields are ignored, as OpenAI
// clients send more than a server may use; fields that would change the
// answer in a way we cannot honour (n > kMaxChoices, legacy functions,
// images, audio, echo; tools beside response_format or logprobs) are
// errors naming the field.
struct ParsedRequest {
  CompletionRequest request;
  std::optional<ApiError> error;
};
ParsedRequest ParseCompletionRequest(const std::string& body, bool chat, int max_stop = 16);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Of prompt_tokens, kept from what a session held and not evaluated again
  // (OpenAI's prompt_tokens_details.cached_tokens).
  int64_t cached_tokens = 0;
};
nlohmann::json UsageJson(const Usage& usage);

// One generated token's log probability, for the response.
struct LogprobEntry {
  std::string token;  // its piece: raw bytes, possibly part of a UTF-8 character
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;  // most likely first
  int64_t text_offset = 0;  // where the piece begins in the completion's text
};
// A choice's "logprobs": for chat {"content": [{token, logprob, bytes,
// top_logprobs}], "refusal": null}; for completions the legacy {tokens,
// token_logprobs, top_logprobs (token -> logprob), text_offset}.
nlohmann::json LogprobsJson(const CompletionRequest& request,
                            const std::vector<LogprobEntry>& entries);

// The whole response of a request that did not stream (`logprobs`: the
// choice's, else null).
nlohmann::json CompletionResponse(const CompletionRequest& request, const std::string& id,
                                  int64_t created, const std::string& model,
                                  const std::string& fingerprint, const std::string& text,
                                  const std::string& finish_reason, const Usage& usage,
                                  const nlohmann::json* logprobs = nullptr);
// One choice of a response; logprobs null when not asked for.
struct ChoiceResult {
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs;
  // Chat: the calls the reply made; then message.content is null (unless
  // `text` holds some) and message.tool_calls lists them.
  std::vector<ToolCall> tool_calls = {};
};
// The same with several choices (n), choice i at index i.
nlohmann::json CompletionResponse(const CompletionRequest& request, const std::string& id,
                                  int64_t created, const std::string& model,
                                  const std::string& fingerprint,
                                  const std::vector<ChoiceResult>& choices, const Usage& usage);

// One stream chunk: `delta_text` (with `first`, the assistant role too),
// or the last one with `finish_reason`. With include_usage every chunk
// carries "usage": null, and UsageChunk ends the stream with the totals.
nlohmann::json StreamChunk(const CompletionRequest& request, const std::string& id, int64_t created,
                           const std::string& model, const std::string& fingerprint,
                           const std::string* delta_text, bool first,
                           const std::string* finish_reason,
                           const nlohmann::json* logprobs = nullptr, int index = 0);
// The chunks that stream a choice's tool calls as OpenAI does: per call,
// one delta {"tool_calls": [{"index", "id", "type": "function", "function":
// {"name", "arguments": ""}}]} (the first also with the assistant role and
// content null), then deltas with pieces of its arguments
// ({"tool_calls": [{"index", "function": {"arguments"}}]}).
std::vector<nlohmann::json> ToolCallChunks(const CompletionRequest& request, const std::string& id,
                                           int64_t created, const std::string& model,
                                           const std::string& fingerprint,
                                           const std::vector<ToolCall>& calls, int index = 0);
nlohmann::json UsageChunk(const CompletionRequest& request, const std::string& id, int64_t created,
                          const std::string& model, const std::string& fingerprint,
                          const Usage& usage);

// "data: <json>\n\n", the JSON compact and its invalid UTF-8 replaced.
std::string SseEvent(const nlohmann::json& j);
// Compact JSON text, invalid UTF-8 replaced (never throws).
std::string Dump(const nlohmann::json& j);

}  // namespace ellm::server

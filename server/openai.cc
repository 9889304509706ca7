#include "ellm/server/openai.h"

#include <cmath>

#include "ellm/base/json.h"
#include "ellm/engine/constraint.h"

namespace ellm::server {
namespace {

using nlohmann::json;

json NullOr(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// Reads an optional number field into `out` within [lo, hi]; an error names
// the field.
std::optional<ApiError> Number(const json& body, const char* key, double lo, double hi,
                               double* out) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number()) return InvalidRequest(std::string(key) + " must be a number", key);
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    return InvalidRequest(std::string(key) + " must be between " + json(lo).dump() + " and " +
                              json(hi).dump() + "; got " + v.dump(),
                          key);
  }
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> Integer(const json& body, const char* key, int64_t lo, int64_t hi,
                                std::optional<int64_t>* out) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number_integer()) return InvalidRequest(std::string(key) + " must be an integer", key);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return InvalidRequest(std::string(key) + " must be between " + std::to_string(lo) + " and " +
                              std::to_string(hi) + "; got " + std::to_string(x),
                          key);
  }
  *out = x;
  return std::nullopt;
}

// temperature, top_p, min_p, top_k, the penalties and seed.
std::optional<ApiError> Sampling(const json& body, CompletionRequest* r) {
  double x = r->sampling.temperature;
  if (auto e = Number(body, "temperature", 0, 2, &x)) return e;
  r->sampling.temperature = static_cast<float>(x);
  x = r->sampling.top_p;
  if (auto e = Number(body, "top_p", 0, 1, &x)) return e;
  r->sampling.top_p = static_cast<float>(x);
  x = r->sampling.min_p;
  if (auto e = Number(body, "min_p", 0, 1, &x)) return e;
  r->sampling.min_p = static_cast<float>(x);
  std::optional<int64_t> top_k;
  if (auto e = Integer(body, "top_k", 0, 1 << 20, &top_k)) return e;
  if (top_k) r->sampling.top_k = static_cast<int>(*top_k);
  x = 0;
  if (auto e = Number(body, "presence_penalty", -2, 2, &x)) return e;
  r->sampling.presence_penalty = static_cast<float>(x);
  x = 0;
  if (auto e = Number(body, "frequency_penalty", -2, 2, &x)) return e;
  r->sampling.frequency_penalty = static_cast<float>(x);
  x = r->sampling.repeat_penalty;
  if (auto e = Number(body, "repeat_penalty", 0.01, 10, &x)) return e;
  r->sampling.repeat_penalty = static_cast<float>(x);
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) {
      return InvalidRequest("seed must be an integer", "seed");
    }
    r->sampling.seed = static_cast<uint64_t>(body["seed"].get<int64_t>());
    r->seeded = true;
  }
  return std::nullopt;
}

// Chat: "logprobs" true/false and "top_logprobs" 0..20 (only with
// logprobs); completions: "logprobs" an integer 0..5 (OpenAI's limits).
std::optional<ApiError> Logprobs(const json& body, bool chat, CompletionRequest* r) {
  std::optional<int64_t> top;
  if (chat) {
    if (body.contains("logprobs") && !body["logprobs"].is_null()) {
      if (!body["logprobs"].is_boolean()) {
        return InvalidRequest("logprobs must be a boolean", "logprobs");
      }
      r->logprobs = body["logprobs"].get<bool>();
    }
    if (auto e = Integer(body, "top_logprobs", 0, 20, &top)) return e;
    if (top && !r->logprobs) {
      return InvalidRequest("top_logprobs needs logprobs: true", "top_logprobs");
    }
  } else {
    if (auto e = Integer(body, "logprobs", 0, 5, &top)) return e;
    r->logprobs = top.has_value();
  }
  r->top_logprobs = static_cast<int>(top.value_or(0));
  return std::nullopt;
}

// A message's content: a string, null (assistant turns), or an array of
// parts of which only {"type": "text"} ones are supported.
std::optional<ApiError> Content(const json& m, const std::string& where, std::string* out) {
  if (!m.contains("content") || m["content"].is_null()) return std::nullopt;
  const json& c = m["content"];
  if (c.is_string()) {
    *out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array()) {
    return InvalidRequest(where + ".content must be a string or an array of content parts",
                          where + ".content");
  }
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = where + ".content[" + std::to_string(i) + "]";
    const json& part = c[i];
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return InvalidRequest(at + " must be an object with a \"type\"", at);
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return InvalidRequest(
          at + ": content of type '" + type + "' is not supported by this model server (text only)",
          at + ".type", "unsupported_content_type");
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return InvalidRequest(at + ".text must be a string", at + ".text");
    }
    *out += part["text"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> Messages(const json& body, std::vector<ChatMessage>* out) {
  if (!body.contains("messages")) return InvalidRequest("messages is required", "messages");
  const json& ms = body["messages"];
  if (!ms.is_array() || ms.empty()) {
    return InvalidRequest("messages must be a non-empty array", "messages");
  }
  for (size_t i = 0; i < ms.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = ms[i];
    if (!m.is_object()) return InvalidRequest(where + " must be an object", where);
    if (!m.contains("role") || !m["role"].is_string()) {
      return InvalidRequest(where + ".role must be a string", where + ".role");
    }
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for it
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return InvalidRequest(where + ".role '" + role +
                                "' is not supported (system, developer, user, assistant, tool)",
                            where + ".role");
    }
    ChatMessage msg{role, ""};
    if (m.contains("name") && m["name"].is_string()) msg.name = m["name"].get<std::string>();
    if (auto e = ParseToolTurn(m, i, *out, &msg)) return e;
    if (auto e = Content(m, where, &msg.content)) return e;
    if (role != "assistant" && (!m.contains("content") || m["content"].is_null())) {
      return InvalidRequest(where + ".content is required", where + ".content");
    }
    // Only a tool message carries a name into the template: a user's or
    // assistant's `name` (a speaker's label) would change what templates print.
    if (role != "tool") msg.name.clear();
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> Stop(const json& body, int max_stop, std::vector<std::string>* out) {
  if (!body.contains("stop") || body["stop"].is_null()) return std::nullopt;
  const json& s = body["stop"];
  if (s.is_string()) {
    if (!s.get<std::string>().empty()) out->push_back(s.get<std::string>());
    return std::nullopt;
  }
  if (!s.is_array()) return InvalidRequest("stop must be a string or an array of strings", "stop");
  if (static_cast<int>(s.size()) > max_stop) {
    return InvalidRequest("stop may hold at most " + std::to_string(max_stop) + " strings", "stop");
  }
  for (const json& x : s) {
    if (!x.is_string()) return InvalidRequest("stop must hold only strings", "stop");
    if (!x.get<std::string>().empty()) out->push_back(x.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> Format(const json& body, CompletionRequest* r) {
  if (!body.contains("response_format") || body["response_format"].is_null()) return std::nullopt;
  const json& f = body["response_format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) {
    return InvalidRequest("response_format must be an object with a \"type\"", "response_format");
  }
  const std::string type = f["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    r->format = ResponseFormat::kJsonObject;
    return std::nullopt;
  }
  if (type != "json_schema") {
    return InvalidRequest(
        "response_format.type '" + type + "' is not one of text, json_object, json_schema",
        "response_format.type");
  }
  if (!f.contains("json_schema") || !f["json_schema"].is_object() ||
      !f["json_schema"].contains("schema") || !f["json_schema"]["schema"].is_object()) {
    return InvalidRequest("response_format.json_schema.schema must be a JSON Schema object",
                          "response_format.json_schema.schema");
  }
  r->format = ResponseFormat::kJsonSchema;
  r->json_schema = f["json_schema"]["schema"].dump();
  if (Status s = ValidateJsonSchema(r->json_schema); !s.ok()) {
    return InvalidRequest("response_format.json_schema.schema cannot be enforced: " + s.message(),
                          "response_format.json_schema.schema");
  }
  return std::nullopt;
}

json Base(const CompletionRequest& r, const std::string& id, int64_t created,
          const std::string& model, const std::string& fingerprint, bool chunk) {
  return {{"id", id},
          {"object",
           r.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", created},
          {"model", model},
          {"system_fingerprint", fingerprint}};
}

}  // namespace

nlohmann::json ApiError::ToJson() const {
  return {
      {"error",
       {{"message", message}, {"type", type}, {"param", NullOr(param)}, {"code", NullOr(code)}}}};
}

ApiError InvalidRequest(std::string message, std::string param, std::string code) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError JsonError(const Status& refused, const std::string& what, std::string param) {
  const std::string& reason = refused.reason();
  return InvalidRequest(what + ": " + refused.message(), std::move(param),
                        reason == kJsonTooDeep          ? "json_too_deep"
                        : reason == kJsonTooManyMembers ? "json_too_many_members"
                        : reason == kJsonTooLarge       ? "request_too_large"
                                                        : "invalid_json");
}

ParsedRequest ParseCompletionRequest(const std::string& text, bool chat, int max_stop) {
  ParsedRequest out;
  CompletionRequest& r = out.request;
  r.chat = chat;
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 1.0f;
  auto fail = [&](ApiError e) {
    out.error = std::move(e);
    return out;
  };
  StatusOr<json> parsed = ParseJson(text);
  if (!parsed.ok()) return fail(JsonError(parsed.status(), "the request body"));
  const json body = std::move(*parsed);
  if (!body.is_object()) return fail(InvalidRequest("the request body must be a JSON object"));
  if (body.contains("model")) {
    if (!body["model"].is_string()) return fail(InvalidRequest("model must be a string", "model"));
    r.model = body["model"].get<std::string>();
  }
  if (chat) {
    if (auto e = Messages(body, &r.messages)) return fail(*e);
  } else {
    if (!body.contains("prompt")) return fail(InvalidRequest("prompt is required", "prompt"));
    const json& p = body["prompt"];
    if (p.is_string()) {
      r.prompt = p.get<std::string>();
    } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
      r.prompt = p[0].get<std::string>();
    } else {
      return fail(InvalidRequest("prompt must be a string (one prompt per request)", "prompt"));
    }
  }
  if (chat) {
    // Again keeping the keys' order: tools' schemas are generated in the
    // order they declare properties, and templates print tools as given.
    nlohmann::ordered_json tool_fields = nlohmann::ordered_json::object();
    if (body.contains("tools") || body.contains("tool_choice") ||
        body.contains("parallel_tool_calls")) {
      // The text passed ParseJson above: this parse succeeds.
      StatusOr<nlohmann::ordered_json> ordered = ParseOrderedJson(text);
      if (!ordered.ok()) return fail(JsonError(ordered.status(), "the request body"));
      tool_fields = std::move(*ordered);
    }
    if (auto e = ParseTools(tool_fields, &r.tools)) return fail(*e);
  }
  for (const char* unsupported :
       {"tools", "functions", "audio", "logit_bias", "suffix", "best_of", "echo"}) {
    if (chat && std::string(unsupported) == "tools") continue;
    if (!body.contains(unsupported) || body[unsupported].is_null()) continue;
    const json& v = body[unsupported];
    const bool off = (v.is_boolean() && !v.get<bool>()) || (v.is_array() && v.empty()) ||
                     (v.is_object() && v.empty()) ||
                     (std::string(unsupported) == "best_of" && v == 1);
    if (!off) {
      return fail(InvalidRequest(std::string(unsupported) + " is not supported by this server",
                                 unsupported, "unsupported_parameter"));
    }
  }
  if (auto e = Logprobs(body, chat, &r)) return fail(*e);
  std::optional<int64_t> n;
  if (auto e = Integer(body, "n", 1, kMaxChoices, &n)) return fail(*e);
  r.n = static_cast<int>(n.value_or(1));
  const int64_t kMaxTokens = int64_t{1} << 30;
  if (auto e = Integer(body, "max_tokens", 1, kMaxTokens, &r.max_tokens)) return fail(*e);
  std::optional<int64_t> mct;
  if (auto e = Integer(body, "max_completion_tokens", 1, kMaxTokens, &mct)) return fail(*e);
  if (mct) r.max_tokens = r.max_tokens ? std::min(*r.max_tokens, *mct) : *mct;
  if (auto e = Sampling(body, &r)) return fail(*e);
  if (auto e = Stop(body, max_stop, &r.stop)) return fail(*e);
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean())
      return fail(InvalidRequest("stream must be a boolean", "stream"));
    r.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) {
      return fail(InvalidRequest("stream_options must be an object", "stream_options"));
    }
    if (!r.stream) {
      return fail(
          InvalidRequest("stream_options is only allowed when stream is true", "stream_options"));
    }
    if (so.contains("include_usage")) {
      if (!so["include_usage"].is_boolean()) {
        return fail(InvalidRequest("stream_options.include_usage must be a boolean",
                                   "stream_options.include_usage"));
      }
      r.include_usage = so["include_usage"].get<bool>();
    }
  }
  if (auto e = Format(body, &r)) return fail(*e);
  if (r.tools.active() && r.format != ResponseFormat::kText) {
    return fail(
        InvalidRequest("response_format cannot be combined with tools (tool_choice none "
                       "turns the tools off)",
                       "response_format", "unsupported_parameter"));
  }
  if (r.tools.active() && r.logprobs) {
    return fail(
        InvalidRequest("logprobs are not supported with tools (tool_choice none turns "
                       "the tools off)",
                       "logprobs", "unsupported_parameter"));
  }
  return out;
}

nlohmann::json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

nlohmann::json LogprobsJson(const CompletionRequest& r, const std::vector<LogprobEntry>& entries) {
  auto bytes = [](const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(static_cast<int>(c));
    return b;
  };
  if (r.chat) {
    json content = json::array();
    for (const LogprobEntry& e : entries) {
      json top = json::array();
      for (const auto& [t, lp] : e.top) {
        top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes(t)}});
      }
      content.push_back({{"token", e.token},
                         {"logprob", e.logprob},
                         {"bytes", bytes(e.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(e.token);
    lps.push_back(e.logprob);
    json top = json::object();
    for (const auto& [t, lp] : e.top) {
      if (!top.contains(t)) top[t] = lp;
    }
    tops.push_back(top);
    offsets.push_back(e.text_offset);
  }
  return {{"tokens", tokens},
          {"token_logprobs", lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

nlohmann::json CompletionResponse(const CompletionRequest& r, const std::string& id,
                                  int64_t created, const std::string& model,
                                  const std::string& fingerprint, const std::string& text,
                                  const std::string& finish_reason, const Usage& usage,
                                  const nlohmann::json* logprobs) {
  return CompletionResponse(r, id, created, model, fingerprint,
                            {{text, finish_reason, logprobs ? *logprobs : json(nullptr)}}, usage);
}

nlohmann::json CompletionResponse(const CompletionRequest& r, const std::string& id,
                                  int64_t created, const std::string& model,
                                  const std::string& fingerprint,
                                  const std::vector<ChoiceResult>& choices, const Usage& usage) {
  json out = Base(r, id, created, model, fingerprint, false);
  out["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json choice = {{"index", i}, {"logprobs", c.logprobs}, {"finish_reason", c.finish_reason}};
    if (r.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = ToolCallsJson(c.tool_calls);
      }
    } else {
      choice["text"] = c.text;
    }
    out["choices"].push_back(std::move(choice));
  }
  out["usage"] = UsageJson(usage);
  return out;
}

nlohmann::json StreamChunk(const CompletionRequest& r, const std::string& id, int64_t created,
                           const std::string& model, const std::string& fingerprint,
                           const std::string* delta_text, bool first,
                           const std::string* finish_reason, const nlohmann::json* logprobs,
                           int index) {
  json out = Base(r, id, created, model, fingerprint, true);
  json choice = {{"index", index},
                 {"logprobs", logprobs ? *logprobs : json(nullptr)},
                 {"finish_reason", finish_reason ? json(*finish_reason) : json(nullptr)}};
  if (r.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (delta_text) delta["content"] = *delta_text;
    choice["delta"] = delta;
  } else {
    choice["text"] = delta_text ? *delta_text : "";
  }
  out["choices"] = json::array({choice});
  if (r.include_usage) out["usage"] = nullptr;
  return out;
}

std::vector<nlohmann::json> ToolCallChunks(const CompletionRequest& r, const std::string& id,
                                           int64_t created, const std::string& model,
                                           const std::string& fingerprint,
                                           const std::vector<ToolCall>& calls, int index) {
  // Arguments go in pieces of about this many bytes, cut between UTF-8
  // characters, as a model's tokens would come.
  constexpr size_t kPiece = 16;
  std::vector<json> out;
  auto chunk = [&](json delta) {
    json c = Base(r, id, created, model, fingerprint, true);
    c["choices"] = json::array({{{"index", index},
                                 {"delta", std::move(delta)},
                                 {"logprobs", nullptr},
                                 {"finish_reason", nullptr}}});
    if (r.include_usage) c["usage"] = nullptr;
    out.push_back(std::move(c));
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    const ToolCall& call = calls[k];
    json head = {{"index", k},
                 {"id", call.id},
                 {"type", "function"},
                 {"function", {{"name", call.name}, {"arguments", ""}}}};
    json delta = {{"tool_calls", json::array({head})}};
    if (k == 0) {
      delta["role"] = "assistant";
      delta["content"] = nullptr;
    }
    chunk(std::move(delta));
    const std::string& args = call.arguments;
    for (size_t at = 0; at < args.size();) {
      size_t end = std::min(args.size(), at + kPiece);
      while (end < args.size() && (static_cast<unsigned char>(args[end]) & 0xC0) == 0x80) ++end;
      chunk({{"tool_calls",
              json::array(
                  {{{"index", k}, {"function", {{"arguments", args.substr(at, end - at)}}}}})}});
      at = end;
    }
  }
  return out;
}

nlohmann::json UsageChunk(const CompletionRequest& r, const std::string& id, int64_t created,
                          const std::string& model, const std::string& fingerprint,
                          const Usage& usage) {
  json out = Base(r, id, created, model, fingerprint, true);
  out["choices"] = json::array();
  out["usage"] = UsageJson(usage);
  return out;
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string SseEvent(const nlohmann::json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace ellm::server

// Runs POST /v1/chat/completions and /v1/completions: parses the request,
// renders the prompt, admits it past the queue's bound, runs each choice's
// reply in a session (the choices' tokens decoded together) and answers
// whole or as Server-Sent Events, with log probabilities when asked.
#include "completion_runner.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client_connection.h"
#include "ellm/engine/constraint.h"

namespace ellm::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The chat prompt: the messages, with the tools and their turns as the
// template reads them or in the generic format (tool_calls.h).
StatusOr<std::string> ChatPrompt(const ChatTemplate& tmpl, const CompletionRequest& r) {
  bool tool_turns = false;
  for (const ChatMessage& m : r.messages) tool_turns |= m.role == "tool" || !m.tool_calls.empty();
  if (!r.tools.active() && !tool_turns) return tmpl.Apply(r.messages, true);
  const bool native = tmpl.handles_tools();
  const std::string tools = native && r.tools.active() ? r.tools.tools_json.dump() : "";
  return tmpl.Apply(ToolMessages(r.messages, r.tools, native, DetectToolSyntax(tmpl)), true, tools);
}

// The constraint a reply with tools is held to, in the model's syntax.
StatusOr<std::unique_ptr<JsonConstraint>> ToolConstraint(const ToolRequest& tools,
                                                         ToolSyntax syntax, const Tokenizer& tok) {
  if (syntax == ToolSyntax::kHermes) {
    return JsonConstraint::FromSchemaInTags(ToolCallSchema(tools), HermesToolTags(tools), tok);
  }
  return JsonConstraint::FromSchema(ToolReplySchema(tools), tok);
}

// A choice's reply as the response reports it: with tools, the calls and
// the text beside them (generic: the text the reply's JSON holds).
ChoiceResult Result(const CompletionRequest& r, ToolSyntax syntax, const Reply& reply) {
  ChoiceResult c{reply.text, std::string(FinishReasonName(reply.finish)), nullptr};
  if (!r.tools.active()) return c;
  ToolReply t =
      syntax == ToolSyntax::kHermes ? ParseHermesReply(reply.text) : ParseToolReply(reply.text);
  c.text = t.text;
  if (t.ok && !t.calls.empty()) {
    c.tool_calls = std::move(t.calls);
    c.finish_reason = "tool_calls";
  }
  return c;
}

// A place in the queue, given back when the generation ends: a streamed
// reply's before its [DONE], so that a client's next request, sent on
// reading it, is never refused for the place its last one still held
// (httplib drops the stream's provider only after the client has read to
// the end).
class Admission {
 public:
  Admission(ServerState& st, std::string key, int choices)
      : st_(st), key_(std::move(key)), choices_(choices) {}
  ~Admission() { Release(); }
  void Release() {
    if (released_.exchange(true)) return;
    st_.admitted.fetch_sub(1);
    if (st_.per_key_limit <= 0) return;
    std::lock_guard<std::mutex> lock(st_.keys_mu);
    auto it = st_.key_choices.find(key_);
    if (it != st_.key_choices.end() && (it->second -= choices_) <= 0) st_.key_choices.erase(it);
  }

 private:
  ServerState& st_;
  std::string key_;
  int choices_;
  std::atomic<bool> released_{false};
};

// Admission: past the queue's bound, or past the key's share of the
// sessions (ServerState::per_key_limit), 429 at once; null with `refused`.
std::shared_ptr<Admission> Admit(ServerState& st, const ApiServerOptions& o,
                                 const httplib::Request& req, int choices, ApiError* refused) {
  const std::string auth = req.get_header_value("Authorization");
  const std::string key = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : "";
  if (st.per_key_limit > 0 && choices > st.per_key_limit) {
    *refused =
        InvalidRequest("n is " + std::to_string(choices) + ": one API key may hold at most " +
                           std::to_string(st.per_key_limit) + " sessions at once",
                       "n");
    return nullptr;
  }
  const int limit = std::max(1, o.sessions) + o.max_queue;
  if (st.admitted.fetch_add(1) >= limit) {
    st.admitted.fetch_sub(1);
    *refused = Error(429, "rate_limit_error",
                     "the server is busy (" + std::to_string(limit) +
                         " requests running or queued); retry after a second",
                     "rate_limit_exceeded");
    return nullptr;
  }
  if (st.per_key_limit > 0) {
    std::lock_guard<std::mutex> lock(st.keys_mu);
    int& held = st.key_choices[key];
    if (held + choices > st.per_key_limit) {
      st.admitted.fetch_sub(1);
      *refused = Error(429, "rate_limit_error",
                       "this API key has " + std::to_string(held) +
                           " choices running or queued, and may have " +
                           std::to_string(st.per_key_limit) + "; retry after a second",
                       "rate_limit_exceeded");
      if (held == 0) st.key_choices.erase(key);
      return nullptr;
    }
    held += choices;
  }
  return std::make_shared<Admission>(st, key, choices);
}

// The prompt's tokens for a request, and the room left for the reply; or
// the error to answer.
struct Prompt {
  std::shared_ptr<std::vector<TokenId>> tokens;
  int64_t room = 0;
  std::optional<ApiError> error;
};

Prompt MakePrompt(const ServerState& st, const CompletionRequest& r, bool chat) {
  Prompt p;
  Engine& engine = *st.engine;
  if (!r.model.empty() && r.model != st.model_id && r.model != engine.info().name) {
    ApiError e =
        Error(404, "invalid_request_error",
              "the model '" + r.model + "' does not exist; this server has '" + st.model_id + "'",
              "model_not_found");
    e.param = "model";
    p.error = e;
    return p;
  }
  std::string text = r.prompt;
  if (chat) {
    if (!engine.chat_template().ok()) {
      p.error = Error(
          500, "server_error",
          "the model has no usable chat template: " + engine.chat_template().status().message());
      return p;
    }
    auto rendered = ChatPrompt(*engine.chat_template(), r);
    if (!rendered.ok()) {
      p.error = InvalidRequest("messages: " + rendered.status().message(), "messages");
      return p;
    }
    text = std::move(*rendered);
  }
  p.tokens = std::make_shared<std::vector<TokenId>>(engine.tokenizer().Encode(text, true, true));
  const int64_t n_prompt = static_cast<int64_t>(p.tokens->size());
  const char* what = chat ? "messages" : "prompt";
  if (n_prompt == 0) {
    p.error = InvalidRequest("the prompt is empty", what);
    return p;
  }
  p.room = st.n_ctx - n_prompt;
  if (p.room <= 0 || (r.max_tokens && *r.max_tokens > p.room)) {
    std::string m =
        "This model's maximum context length is " + std::to_string(st.n_ctx) +
        " tokens. However, you requested " + std::to_string(n_prompt + r.max_tokens.value_or(0)) +
        " tokens (" + std::to_string(n_prompt) + " in the " + what + ", " +
        std::to_string(r.max_tokens.value_or(0)) +
        " in the completion). Please reduce the length of the " + what + " or completion.";
    p.error = InvalidRequest(m, what, "context_length_exceeded");
  }
  return p;
}

// One reply per choice (`n`), each with its own options (a seeded
// request's choice i samples with seed + i), its JSON constraint (it keeps
// the document's state) and its tokens' log probabilities (filled by the
// reply as it goes, read by the stream as its text is released).
struct Choice {
  ReplyOptions ro;
  std::unique_ptr<JsonConstraint> constraint;
  std::vector<TokenLogprob> logprobs;
};

// The constraint choice replies are held to (none: nullptr), or the error.
StatusOr<std::unique_ptr<JsonConstraint>> ChoiceConstraint(const CompletionRequest& r,
                                                           ToolSyntax syntax,
                                                           const Tokenizer& tok) {
  if (r.format == ResponseFormat::kJsonObject) return JsonConstraint::AnyObject(tok);
  if (r.format == ResponseFormat::kJsonSchema)
    return JsonConstraint::FromSchema(r.json_schema, tok);
  if (r.tools.active()) return ToolConstraint(r.tools, syntax, tok);
  return std::unique_ptr<JsonConstraint>();
}

std::optional<ApiError> MakeChoices(const CompletionRequest& r, ToolSyntax syntax,
                                    const Tokenizer& tok, int64_t room, std::vector<Choice>* out) {
  out->resize(static_cast<size_t>(r.n));
  for (int i = 0; i < r.n; ++i) {
    Choice& c = (*out)[static_cast<size_t>(i)];
    auto made = ChoiceConstraint(r, syntax, tok);
    if (!made.ok() && r.format == ResponseFormat::kJsonSchema) {
      return InvalidRequest("response_format.json_schema.schema: " + made.status().message(),
                            "response_format.json_schema.schema");
    }
    if (!made.ok()) {
      return InvalidRequest("tools cannot be enforced: " + made.status().message(), "tools");
    }
    c.constraint = std::move(*made);
    c.ro.sampling = r.sampling;
    c.ro.sampling.seed = r.seeded ? r.sampling.seed + static_cast<uint64_t>(i)
                                  : static_cast<uint64_t>(std::random_device{}());
    c.ro.max_tokens = r.max_tokens.value_or(room);
    c.ro.stop = r.stop;
    c.ro.constraint = c.constraint.get();
    if (r.logprobs) {
      c.ro.logprobs = &c.logprobs;
      c.ro.top_logprobs = r.top_logprobs;
    }
  }
  return std::nullopt;
}

// An admitted request's choices and how they run; copied into a stream's
// provider, so it holds what outlives the handler by shared pointers.
struct Completion {
  ServerState* st;
  std::shared_ptr<const CompletionRequest> request;
  std::shared_ptr<std::vector<TokenId>> prompt;
  std::shared_ptr<std::vector<Choice>> choices;
  ToolSyntax syntax;
  Clock::time_point arrived;
  ClientConnection conn;  // a client that goes away ends its replies
  std::string id;
  int64_t created;

  // Choice i's reply in a session with interactive turns; `on_text` gets
  // the pieces. Ends at the next prefill slice or token once the client is
  // gone. Records the metrics.
  StatusOr<Reply> Run(int i, const ReplyTextFn& on_text) const;
  // Every choice, the first on this thread, the others on their own (their
  // tokens decode together through the batcher).
  std::vector<StatusOr<Reply>> RunAll(const std::function<StatusOr<Reply>(int)>& one) const {
    const int n = request->n;
    std::vector<StatusOr<Reply>> replies(static_cast<size_t>(n), InternalError("not run"));
    std::vector<std::thread> others;
    for (int i = 1; i < n; ++i) {
      others.emplace_back([&replies, &one, i] { replies[static_cast<size_t>(i)] = one(i); });
    }
    replies[0] = one(0);
    for (std::thread& t : others) t.join();
    return replies;
  }
  // Choice i's log-probability entries [*from, end) whose pieces begin
  // before `upto` bytes of its text.
  std::vector<LogprobEntry> Entries(int i, size_t* from, size_t upto) const {
    const std::vector<TokenLogprob>& lps = (*choices)[static_cast<size_t>(i)].logprobs;
    const Tokenizer& tok = st->engine->tokenizer();
    std::vector<LogprobEntry> out;
    for (; *from < lps.size() && lps[*from].text_offset < upto; ++*from) {
      const TokenLogprob& t = lps[*from];
      LogprobEntry e{tok.TokenToPiece(t.token), t.logprob, {}, static_cast<int64_t>(t.text_offset)};
      for (const auto& [tid, lp] : t.top) e.top.emplace_back(tok.TokenToPiece(tid), lp);
      out.push_back(std::move(e));
    }
    return out;
  }
  json Chunk(const std::string* delta, bool first, const std::string* finish, const json* lps,
             int i) const {
    return StreamChunk(*request, id, created, st->model_id, st->fingerprint, delta, first, finish,
                       lps, i);
  }
};

// What the response reports: the prompt once, every choice's tokens.
Usage UsageOf(const std::vector<StatusOr<Reply>>& replies) {
  Usage u{replies[0]->prompt_tokens, 0, replies[0]->reused_tokens};
  for (const StatusOr<Reply>& reply : replies) u.completion_tokens += reply->completion_tokens;
  return u;
}

StatusOr<Reply> Completion::Run(int i, const ReplyTextFn& on_text) const {
  ServerState& s = *st;
  const ServerState::AcquiredSlot slot = s.AcquireSlot(*prompt);
  StatusOr<Reply> reply = InternalError("not run");
  {
    // The reply takes the engine's turns itself: one for its prefill, then
    // one per token shared with the other sessions' (batched decode).
    ReplyOptions batched = (*choices)[static_cast<size_t>(i)].ro;
    batched.batcher = s.batcher.get();
    // Worked out when the slot was chosen; the session is this reply's since.
    batched.reusable_prefix = slot.reusable_prefix;
    const auto started = Clock::now();
    auto last = started;
    bool first = true;
    reply = GenerateReply(
        *s.slots[slot.index].session, s.engine->tokenizer(), *prompt, batched,
        [&](std::string_view piece) {
          const auto now = Clock::now();
          {
            std::lock_guard<std::mutex> lock(s.metrics_mu);
            if (first) {
              s.ttft.Observe(Seconds(arrived, now));
              first = false;
            } else {
              s.itl.Observe(Seconds(last, now));
            }
          }
          last = now;
          if (conn.Gone()) return false;
          return on_text ? on_text(piece) : true;
        },
        [&](int64_t, int64_t) { return !conn.Gone(); });
    std::lock_guard<std::mutex> lock(s.metrics_mu);
    s.queue_wait.Observe(Seconds(arrived, started));
    if (reply.ok() && reply->finish == FinishReason::kCancelled) ++s.client_gone;
    if (reply.ok()) {
      s.prompt_tokens += static_cast<uint64_t>(reply->prompt_tokens);
      s.completion_tokens += static_cast<uint64_t>(reply->completion_tokens);
      s.reused_tokens += static_cast<uint64_t>(reply->reused_tokens);
    }
  }
  s.ReleaseSlot(slot.index);
  return reply;
}

// The whole response at once; the error to answer when a reply failed.
std::optional<ApiError> AnswerWhole(const Completion& c, httplib::Response& res) {
  const CompletionRequest& r = *c.request;
  std::vector<StatusOr<Reply>> replies = c.RunAll([&c](int i) { return c.Run(i, nullptr); });
  std::vector<ChoiceResult> results;
  for (int i = 0; i < r.n; ++i) {
    const StatusOr<Reply>& reply = replies[static_cast<size_t>(i)];
    if (!reply.ok()) {
      return Error(500, "server_error", "generation failed: " + reply.status().ToString());
    }
    ChoiceResult choice = Result(r, c.syntax, *reply);
    if (r.logprobs) {
      size_t from = 0;
      choice.logprobs = LogprobsJson(r, c.Entries(i, &from, reply->text.size()));
    }
    results.push_back(std::move(choice));
  }
  res.set_content(Dump(CompletionResponse(r, c.id, c.created, c.st->model_id, c.st->fingerprint,
                                          results, UsageOf(replies))),
                  "application/json");
  return std::nullopt;
}

// Choice i streamed through `send`: its pieces as they come (with tools,
// the calls and text once the reply is whole), then its finish reason.
StatusOr<Reply> StreamChoice(const Completion& c, int i,
                             const std::function<bool(const json&)>& send, const bool& open) {
  const CompletionRequest& sr = *c.request;
  bool first = true;
  size_t released = 0, logprobs_sent = 0;
  StatusOr<Reply> reply = c.Run(i, [&](std::string_view piece) {
    if (sr.tools.active()) return open;
    const std::string delta(piece);
    released += piece.size();
    json logprobs;
    if (sr.logprobs) logprobs = LogprobsJson(sr, c.Entries(i, &logprobs_sent, released));
    const bool ok = send(c.Chunk(&delta, first, nullptr, sr.logprobs ? &logprobs : nullptr, i));
    first = false;
    return ok;
  });
  if (!reply.ok() || reply->finish == FinishReason::kCancelled) return reply;
  std::string finish(FinishReasonName(reply->finish));
  if (sr.tools.active()) {
    const ChoiceResult result = Result(sr, c.syntax, *reply);
    finish = result.finish_reason;
    if (!result.text.empty()) send(c.Chunk(&result.text, true, nullptr, nullptr, i));
    std::vector<json> calls = ToolCallChunks(sr, c.id, c.created, c.st->model_id, c.st->fingerprint,
                                             result.tool_calls, i);
    for (json& chunk : calls) {
      json& delta = chunk["choices"][0]["delta"];
      if (!result.text.empty()) {  // the text came first, with the role
        delta.erase("role");
        delta.erase("content");
      }
      send(chunk);
    }
    first = result.tool_calls.empty() && result.text.empty();
  }
  if (first) {
    const std::string empty;
    send(c.Chunk(&empty, true, nullptr, nullptr, i));
  }
  send(c.Chunk(nullptr, false, &finish, nullptr, i));
  return reply;
}

// The stream's one call of the provider: every choice, an error event if
// one failed, usage if asked, then [DONE]. Whether the client is still there.
bool StreamAll(const Completion& c, Admission& admitted, httplib::DataSink& sink) {
  ServerState& st = *c.st;
  st.active_streams.fetch_add(1);
  // The choices' threads share the sink.
  std::mutex sink_mu;
  bool open = true;
  auto send = [&](const json& chunk) {
    const std::string event = SseEvent(chunk);
    std::lock_guard<std::mutex> lock(sink_mu);
    open = open && sink.write(event.data(), event.size());
    return open;
  };
  std::vector<StatusOr<Reply>> replies =
      c.RunAll([&](int i) { return StreamChoice(c, i, send, open); });
  bool all_ok = true;
  for (const StatusOr<Reply>& reply : replies) {
    if (!reply.ok() && all_ok) {
      all_ok = false;
      // The status is sent; the stream carries the error as OpenAI's does.
      send(Error(500, "server_error", "generation failed: " + reply.status().ToString()).ToJson());
    }
  }
  if (all_ok && c.request->include_usage) {
    send(UsageChunk(*c.request, c.id, c.created, st.model_id, st.fingerprint, UsageOf(replies)));
  }
  admitted.Release();
  if (open) {
    static const std::string kDone = "data: [DONE]\n\n";
    sink.write(kDone.data(), kDone.size());
    sink.done();
  }
  st.active_streams.fetch_sub(1);
  return open;
}

}  // namespace

void RunCompletion(ServerState& st, const ApiServerOptions& o, const httplib::Request& req,
                   httplib::Response& res, bool chat) {
  const auto arrived = Clock::now();
  const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  auto fail = [&](const ApiError& e) {
    SendError(res, e);
    st.Count(endpoint, e.status);
  };
  if (AnswerUnready(st, res)) return st.Count(endpoint, 503);
  ParsedRequest parsed = ParseCompletionRequest(req.body, chat);
  if (parsed.error) return fail(*parsed.error);
  auto request = std::make_shared<const CompletionRequest>(std::move(parsed.request));
  const CompletionRequest& r = *request;
  Prompt prompt = MakePrompt(st, r, chat);
  if (prompt.error) return fail(*prompt.error);
  const Tokenizer& tok = st.engine->tokenizer();
  const ToolSyntax syntax = chat && st.engine->chat_template().ok()
                                ? DetectToolSyntax(*st.engine->chat_template())
                                : ToolSyntax::kGeneric;
  auto choices = std::make_shared<std::vector<Choice>>();
  if (auto error = MakeChoices(r, syntax, tok, prompt.room, choices.get())) return fail(*error);
  ApiError refused;
  std::shared_ptr<Admission> admitted = Admit(st, o, req, r.n, &refused);
  if (!admitted) {
    if (refused.status == 429) res.set_header("Retry-After", "1");
    return fail(refused);
  }
  const Completion c{
      &st,      request, prompt.tokens,         choices,
      syntax,   arrived, ClientConnection(req), RandomId(chat ? "chatcmpl-" : "cmpl-"),
      UnixNow()};
  if (!r.stream) {
    if (auto error = AnswerWhole(c, res)) return fail(*error);
    return st.Count(endpoint, 200);
  }
  st.Count(endpoint, 200);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [c, admitted](size_t, httplib::DataSink& sink) { return StreamAll(c, *admitted, sink); });
}

}  // namespace ellm::server

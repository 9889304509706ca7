// Runs POST /v1/chat/completions and /v1/completions: parses the request,
// renders the prompt, admits it past the queue's bound, runs each choice's
// reply in a session (the choices' tokens decoded together) and answers
// whole or as Server-Sent Events, with log probabilities when asked.
#include "completion_runner.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
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
  auto request = std::make_shared<CompletionRequest>(std::move(parsed.request));
  const CompletionRequest& r = *request;
  Engine& engine = *st.engine;
  if (!r.model.empty() && r.model != st.model_id && r.model != engine.info().name) {
    ApiError e =
        Error(404, "invalid_request_error",
              "the model '" + r.model + "' does not exist; this server has '" + st.model_id + "'",
              "model_not_found");
    e.param = "model";
    return fail(e);
  }
  const Tokenizer& tok = engine.tokenizer();
  const ToolSyntax syntax = chat && engine.chat_template().ok()
                                ? DetectToolSyntax(*engine.chat_template())
                                : ToolSyntax::kGeneric;
  std::string text = r.prompt;
  if (chat) {
    if (!engine.chat_template().ok()) {
      return fail(Error(
          500, "server_error",
          "the model has no usable chat template: " + engine.chat_template().status().message()));
    }
    auto rendered = ChatPrompt(*engine.chat_template(), r);
    if (!rendered.ok()) {
      return fail(InvalidRequest("messages: " + rendered.status().message(), "messages"));
    }
    text = std::move(*rendered);
  }
  auto prompt = std::make_shared<std::vector<TokenId>>(tok.Encode(text, true, true));
  const int64_t n_prompt = static_cast<int64_t>(prompt->size());
  if (n_prompt == 0)
    return fail(InvalidRequest("the prompt is empty", chat ? "messages" : "prompt"));
  const int64_t room = st.n_ctx - n_prompt;
  if (room <= 0 || (r.max_tokens && *r.max_tokens > room)) {
    std::string m = "This model's maximum context length is " + std::to_string(st.n_ctx) +
                    " tokens. However, you requested " +
                    std::to_string(n_prompt + r.max_tokens.value_or(0)) + " tokens (" +
                    std::to_string(n_prompt) + " in the " + (chat ? "messages" : "prompt") + ", " +
                    std::to_string(r.max_tokens.value_or(0)) +
                    " in the completion). Please reduce the length of the " +
                    (chat ? "messages" : "prompt") + " or completion.";
    return fail(InvalidRequest(m, chat ? "messages" : "prompt", "context_length_exceeded"));
  }
  // One reply per choice (`n`), each with its own options (a seeded
  // request's choice i samples with seed + i), its JSON constraint (it
  // keeps the document's state) and its tokens' log probabilities (filled
  // by the reply as it goes, read by the stream as its text is released).
  struct Choice {
    ReplyOptions ro;
    std::unique_ptr<JsonConstraint> constraint;
    std::vector<TokenLogprob> logprobs;
  };
  auto choices = std::make_shared<std::vector<Choice>>(static_cast<size_t>(r.n));
  for (int i = 0; i < r.n; ++i) {
    Choice& c = (*choices)[static_cast<size_t>(i)];
    if (r.format == ResponseFormat::kJsonObject) {
      c.constraint = JsonConstraint::AnyObject(tok);
    } else if (r.format == ResponseFormat::kJsonSchema) {
      auto made = JsonConstraint::FromSchema(r.json_schema, tok);
      if (!made.ok()) {
        return fail(InvalidRequest("response_format.json_schema.schema: " + made.status().message(),
                                   "response_format.json_schema.schema"));
      }
      c.constraint = std::move(*made);
    } else if (r.tools.active()) {
      auto made = ToolConstraint(r.tools, syntax, tok);
      if (!made.ok()) {
        return fail(
            InvalidRequest("tools cannot be enforced: " + made.status().message(), "tools"));
      }
      c.constraint = std::move(*made);
    }
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
  ApiError refused;
  std::shared_ptr<Admission> admitted = Admit(st, o, req, r.n, &refused);
  if (!admitted) {
    if (refused.status == 429) res.set_header("Retry-After", "1");
    return fail(refused);
  }

  const Tokenizer* tokp = &tok;  // the engine's: outlives the stream
  // Choice i's entries [*from, end) whose pieces begin before `upto` bytes
  // of its text.
  auto entries = [choices, tokp](int i, size_t* from, size_t upto) {
    const std::vector<TokenLogprob>& lps = (*choices)[static_cast<size_t>(i)].logprobs;
    std::vector<LogprobEntry> out;
    for (; *from < lps.size() && lps[*from].text_offset < upto; ++*from) {
      const TokenLogprob& t = lps[*from];
      LogprobEntry e{
          tokp->TokenToPiece(t.token), t.logprob, {}, static_cast<int64_t>(t.text_offset)};
      for (const auto& [tid, lp] : t.top) e.top.emplace_back(tokp->TokenToPiece(tid), lp);
      out.push_back(std::move(e));
    }
    return out;
  };
  const std::string id = RandomId(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = UnixNow();

  // Runs choice i's reply in a session with interactive turns; `on_text`
  // gets the pieces. A client that goes away (`conn`) ends it at the next
  // prefill slice or token. Records the metrics.
  const ClientConnection conn(req);
  auto run = [&st, prompt, choices, arrived, conn](int i, const ReplyTextFn& on_text) {
    const ServerState::AcquiredSlot slot = st.AcquireSlot(*prompt);
    StatusOr<Reply> reply = InternalError("not run");
    {
      // The reply takes the engine's turns itself: one for its prefill,
      // then one per token shared with the other sessions' (batched decode).
      ReplyOptions batched = (*choices)[static_cast<size_t>(i)].ro;
      batched.batcher = st.batcher.get();
      // Worked out when the slot was chosen; the session is this reply's since.
      batched.reusable_prefix = slot.reusable_prefix;
      const auto started = Clock::now();
      auto last = started;
      bool first = true;
      reply = GenerateReply(
          *st.slots[slot.index].session, st.engine->tokenizer(), *prompt, batched,
          [&](std::string_view piece) {
            const auto now = Clock::now();
            {
              std::lock_guard<std::mutex> lock(st.metrics_mu);
              if (first) {
                st.ttft.Observe(Seconds(arrived, now));
                first = false;
              } else {
                st.itl.Observe(Seconds(last, now));
              }
            }
            last = now;
            if (conn.Gone()) return false;
            return on_text ? on_text(piece) : true;
          },
          [&](int64_t, int64_t) { return !conn.Gone(); });
      std::lock_guard<std::mutex> lock(st.metrics_mu);
      st.queue_wait.Observe(Seconds(arrived, started));
      if (reply.ok() && reply->finish == FinishReason::kCancelled) ++st.client_gone;
      if (reply.ok()) {
        st.prompt_tokens += static_cast<uint64_t>(reply->prompt_tokens);
        st.completion_tokens += static_cast<uint64_t>(reply->completion_tokens);
        st.reused_tokens += static_cast<uint64_t>(reply->reused_tokens);
      }
    }
    st.ReleaseSlot(slot.index);
    return reply;
  };
  // Runs every choice, the first on this thread, the others on their own
  // (their tokens decode together through the batcher).
  auto run_all = [n = r.n](const std::function<StatusOr<Reply>(int)>& one) {
    std::vector<StatusOr<Reply>> replies(static_cast<size_t>(n), InternalError("not run"));
    std::vector<std::thread> others;
    for (int i = 1; i < n; ++i) {
      others.emplace_back([&replies, &one, i] { replies[static_cast<size_t>(i)] = one(i); });
    }
    replies[0] = one(0);
    for (std::thread& t : others) t.join();
    return replies;
  };
  // What the response reports: the prompt once, every choice's tokens.
  auto usage = [](const std::vector<StatusOr<Reply>>& replies) {
    Usage u{replies[0]->prompt_tokens, 0, replies[0]->reused_tokens};
    for (const StatusOr<Reply>& reply : replies) u.completion_tokens += reply->completion_tokens;
    return u;
  };

  if (!r.stream) {
    std::vector<StatusOr<Reply>> replies = run_all([&run](int i) { return run(i, nullptr); });
    std::vector<ChoiceResult> results;
    for (int i = 0; i < r.n; ++i) {
      const StatusOr<Reply>& reply = replies[static_cast<size_t>(i)];
      if (!reply.ok()) {
        return fail(Error(500, "server_error", "generation failed: " + reply.status().ToString()));
      }
      ChoiceResult c = Result(r, syntax, *reply);
      if (r.logprobs) {
        size_t from = 0;
        c.logprobs = LogprobsJson(r, entries(i, &from, reply->text.size()));
      }
      results.push_back(std::move(c));
    }
    res.set_content(Dump(CompletionResponse(r, id, created, st.model_id, st.fingerprint, results,
                                            usage(replies))),
                    "application/json");
    st.Count(endpoint, 200);
    return;
  }
  st.Count(endpoint, 200);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider("text/event-stream", [&st, request, run, run_all, usage, id,
                                                         created, admitted, entries,
                                                         syntax](size_t, httplib::DataSink& sink) {
    const CompletionRequest& sr = *request;
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
    auto stream_one = [&](int i) {
      bool first = true;
      size_t released = 0, logprobs_sent = 0;
      StatusOr<Reply> reply = run(i, [&](std::string_view piece) {
        // With tools the reply is streamed once it is whole: as calls
        // (and the text beside them), or as text.
        if (sr.tools.active()) return open;
        const std::string delta(piece);
        released += piece.size();
        json logprobs;
        if (sr.logprobs) logprobs = LogprobsJson(sr, entries(i, &logprobs_sent, released));
        const bool ok = send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, &delta,
                                         first, nullptr, sr.logprobs ? &logprobs : nullptr, i));
        first = false;
        return ok;
      });
      if (reply.ok() && reply->finish != FinishReason::kCancelled) {
        std::string finish(FinishReasonName(reply->finish));
        if (sr.tools.active()) {
          const ChoiceResult c = Result(sr, syntax, *reply);
          finish = c.finish_reason;
          if (!c.text.empty()) {
            send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, &c.text, true, nullptr,
                             nullptr, i));
          }
          std::vector<json> calls =
              ToolCallChunks(sr, id, created, st.model_id, st.fingerprint, c.tool_calls, i);
          for (json& chunk : calls) {
            json& delta = chunk["choices"][0]["delta"];
            if (!c.text.empty()) {  // the text came first, with the role
              delta.erase("role");
              delta.erase("content");
            }
            send(chunk);
          }
          first = c.tool_calls.empty() && c.text.empty();
        }
        if (first) {
          const std::string empty;
          send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, &empty, true, nullptr,
                           nullptr, i));
        }
        send(StreamChunk(sr, id, created, st.model_id, st.fingerprint, nullptr, false, &finish,
                         nullptr, i));
      }
      return reply;
    };
    std::vector<StatusOr<Reply>> replies = run_all(stream_one);
    bool all_ok = true;
    for (const StatusOr<Reply>& reply : replies) {
      if (!reply.ok() && all_ok) {
        all_ok = false;
        // The status is sent; the stream carries the error as OpenAI's does.
        send(
            Error(500, "server_error", "generation failed: " + reply.status().ToString()).ToJson());
      }
    }
    if (all_ok && sr.include_usage) {
      send(UsageChunk(sr, id, created, st.model_id, st.fingerprint, usage(replies)));
    }
    admitted->Release();
    if (open) {
      static const std::string kDone = "data: [DONE]\n\n";
      sink.write(kDone.data(), kDone.size());
      sink.done();
    }
    st.active_streams.fetch_sub(1);
    return open;
  });
}

}  // namespace ellm::server

// Replying to a prompt: prefill it, then sample tokens until an end token,
// a stop string, max_tokens or the end of the context, optionally under a
// JSON constraint. The text is handed out as it grows (streaming), but only
// once it can no longer turn out to be the start of a stop string, and only
// in whole UTF-8 characters, so a client never sees a stop string or a
// broken character. The front doors that answer people (`ellm serve`, the
// OpenAI-compatible API) build on this.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/constraint.h"
#include "ellm/engine/decode_batcher.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/sampler.h"

namespace ellm {

// The log probability of one generated token under the model (the
// log-softmax of its raw logits: before temperature, penalties and any
// constraint), with the most likely alternatives at that step.
struct TokenLogprob {
  TokenId token = -1;
  float logprob = 0;
  size_t text_offset = 0;                      // where the token's piece begins in Reply::text
  std::vector<std::pair<TokenId, float>> top;  // most likely first
};

struct ReplyOptions {
  SamplingOptions sampling;
  int64_t max_tokens = 256;              // tokens generated at most
  std::vector<std::string> stop;         // the reply ends before the first of these
  JsonConstraint* constraint = nullptr;  // owned by the caller, Reset by Reply
  // The longest run of the session's tokens that begins `prompt` is kept,
  // not evaluated again (ReusablePrefix): all of them for a follow-up
  // question after an answer; the shared start, the session truncated to
  // it, for a new conversation with the same system prompt. Otherwise (or
  // false) the session is Reset first.
  bool reuse_prefix = true;
  // With reuse_prefix: ReusablePrefix(session, prompt) when the caller has
  // it already (the HTTP server, choosing among its sessions) and the
  // session has not changed since; -1: the reply works it out.
  int64_t reusable_prefix = -1;
  // Null: the caller holds the engine's turn (EngineGate) for the whole
  // call. Set: the reply takes interactive turns itself, one for the
  // prefill and then one per token, its tokens evaluated together with
  // the other replies decoding through the same batcher.
  DecodeBatcher* batcher = nullptr;
  // Set: each generated token's TokenLogprob is appended here as soon as
  // its piece is added to the text (so before `on_text` sees that text),
  // with the top_logprobs most likely tokens; tokens whose text a stop
  // string cut off are removed at the end. REQUIRES: 0 <= top_logprobs <= 20.
  std::vector<TokenLogprob>* logprobs = nullptr;
  int top_logprobs = 0;
  // Batch work (the pipelines) on an engine it shares: the prompt is
  // evaluated in slices of this many tokens (0: at once), with `on_prefill`
  // asked before each slice and at the end, so that the caller can give up
  // its engine turn between them (EngineGate::Turn::Yield) or stop.
  int64_t prefill_slice = 0;
  // Asked after each token is added to the text, with the number generated
  // so far (before the next token is evaluated); false stops the reply
  // (kCancelled, the text so far kept). Null: never asked.
  std::function<bool(int64_t generated)> on_step;
  // Besides `stop`: where the reply ends in the text so far (it ends
  // before that offset, kStop), or npos to go on; asked after each token
  // (e.g. the pipelines' stop at a line that repeats an earlier one).
  std::function<size_t(std::string_view text)> stop_check;
};

enum class FinishReason {
  kStop,       // an end-of-generation token, a stop string, or a complete JSON document
  kLength,     // max_tokens, or the context is full
  kCancelled,  // `on_text`, `on_prefill` or `on_step` asked to stop
};
std::string_view FinishReasonName(FinishReason reason);  // "stop", "length", "cancelled"

struct Reply {
  std::string text;  // without the stop string
  FinishReason finish = FinishReason::kStop;
  int64_t prompt_tokens = 0;
  int64_t reused_tokens = 0;  // of prompt_tokens, kept from what the session held
  int64_t completion_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double constraint_seconds = 0;  // of decode_seconds
};

// How many of `prompt`'s first tokens `session` can keep: the length of
// their common start when the session holds no more than that or can be
// truncated to it (Session::CanTruncate), at most prompt.size() - 1 (the
// last prompt token is evaluated for its logits); else 0.
int64_t ReusablePrefix(const Session& session, std::span<const TokenId> prompt);

// Text released so far. Returning false stops the reply (kCancelled).
using ReplyTextFn = std::function<bool(std::string_view text)>;
// Prefill progress (positions done, total); false stops the reply.
using ReplyProgressFn = std::function<bool(int64_t done, int64_t total)>;

// Runs `prompt` (token ids, BOS included as the tokenizer gave it) in
// `session` and samples the reply. OUT_OF_RANGE when the prompt leaves no
// room in the context. With a constraint the reply is a complete JSON
// document unless it ends kLength (max_tokens or the context ran out
// first: the caller decides whether a truncated document is an error).
StatusOr<Reply> GenerateReply(Session& session, const Tokenizer& tokenizer,
                              std::span<const TokenId> prompt, const ReplyOptions& options,
                              const ReplyTextFn& on_text,
                              const ReplyProgressFn& on_prefill = nullptr);

// The length of the longest prefix of `text` that ends on a whole UTF-8
// character (a truncated multi-byte sequence at the end is held back).
size_t CompleteUtf8Prefix(std::string_view text);

}  // namespace ellm

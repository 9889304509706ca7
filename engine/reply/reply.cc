#include "ellm/engine/reply.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "ellm/engine/engine_gate.h"
#include "ops/elementwise.h"

namespace ellm {
namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The length of the longest suffix of `text` that is a proper prefix of
// one of `stop`: text that a later token may still turn into a stop string.
size_t StopPrefixAtEnd(std::string_view text, const std::vector<std::string>& stop) {
  size_t held = 0;
  for (const std::string& s : stop) {
    for (size_t n = std::min(text.size(), s.size() - 1); n > held; --n) {
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        held = n;
        break;
      }
    }
  }
  return held;
}

}  // namespace

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "stop";
}

size_t CompleteUtf8Prefix(std::string_view text) {
  // Look back over at most 3 continuation bytes for the start of the last
  // character and check that all its bytes are there.
  size_t i = text.size();
  size_t back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) {
    --i;
    ++back;
  }
  if (i == 0) return back == 0 ? 0 : text.size();  // only continuation bytes: not ours to fix
  const auto lead = static_cast<unsigned char>(text[i - 1]);
  size_t need = 1;
  if (lead >= 0xF0) {
    need = 4;
  } else if (lead >= 0xE0) {
    need = 3;
  } else if (lead >= 0xC0) {
    need = 2;
  } else {
    return text.size();  // ASCII (or stray continuation bytes after it)
  }
  return back + 1 >= need ? text.size() : i - 1;
}

int64_t ReusablePrefix(const Session& session, std::span<const TokenId> prompt) {
  std::span<const TokenId> have = session.tokens();
  const size_t limit = std::min(have.size(), prompt.size() - std::min<size_t>(prompt.size(), 1));
  const auto common = static_cast<int64_t>(
      std::mismatch(have.begin(), have.begin() + static_cast<std::ptrdiff_t>(limit), prompt.begin())
          .first -
      have.begin());
  if (common == session.position() || session.CanTruncate(common)) return common;
  return 0;
}

namespace {

// log-softmax of the chosen token and the k most likely tokens of `logits`.
TokenLogprob LogprobOf(std::span<const float> logits, TokenId chosen, int k) {
  const double log_z = ops::LogSumExp(logits.data(), static_cast<int64_t>(logits.size()));
  TokenLogprob out;
  out.token = chosen;
  out.logprob = static_cast<float>(logits[static_cast<size_t>(chosen)] - log_z);
  if (k > 0) {
    // The k largest in one pass: a min-heap of (logit, id).
    std::vector<std::pair<float, TokenId>> heap;
    heap.reserve(static_cast<size_t>(k) + 1);
    auto greater = [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    for (size_t i = 0; i < logits.size(); ++i) {
      if (static_cast<int>(heap.size()) == k && !(logits[i] > heap.front().first)) continue;
      heap.emplace_back(logits[i], static_cast<TokenId>(i));
      std::push_heap(heap.begin(), heap.end(), greater);
      if (static_cast<int>(heap.size()) > k) {
        std::pop_heap(heap.begin(), heap.end(), greater);
        heap.pop_back();
      }
    }
    std::sort(heap.begin(), heap.end(), greater);
    for (const auto& [logit, id] : heap) {
      out.top.emplace_back(id, static_cast<float>(logit - log_z));
    }
  }
  return out;
}

}  // namespace

StatusOr<Reply> GenerateReply(Session& session, const Tokenizer& tok,
                              std::span<const TokenId> prompt, const ReplyOptions& options,
                              const ReplyTextFn& on_text, const ReplyProgressFn& on_prefill) {
  Reply r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  const int64_t n_ctx = session.n_ctx();
  if (prompt.empty()) return InvalidArgumentError("the prompt is empty");
  if (r.prompt_tokens >= n_ctx) {
    return OutOfRangeError("the prompt has " + std::to_string(r.prompt_tokens) +
                           " tokens; the context holds " + std::to_string(n_ctx) +
                           " and leaves no room to reply");
  }
  // Keep what the session already holds of the prompt's start.
  int64_t keep = 0;
  if (options.reuse_prefix) {
    keep = options.reusable_prefix >= 0 ? options.reusable_prefix : ReusablePrefix(session, prompt);
  }
  if (keep > 0 && keep < session.position() && !session.Truncate(keep).ok()) keep = 0;
  if (keep == 0 && session.position() > 0) session.Reset();
  r.reused_tokens = keep;

  Sampler sampler(options.sampling);
  for (TokenId id : prompt) sampler.Accept(id);
  JsonConstraint* constraint = options.constraint;
  if (constraint != nullptr) constraint->Reset();
  TokenId next = -1;
  Status constraint_status;
  std::vector<float> masked;
  std::vector<TokenLogprob>* logprobs = options.logprobs;
  TokenLogprob next_logprob;
  auto sample = [&](std::span<const float> logits) {
    if (constraint == nullptr) {
      next = sampler.Sample(logits);
      return;
    }
    const auto c0 = std::chrono::steady_clock::now();
    masked.assign(logits.begin(), logits.end());
    if (constraint->Mask(masked) == 0) {
      constraint_status = InternalError("constrained decoding: no token can continue the JSON");
      next = tok.eos();
      return;
    }
    r.constraint_seconds += Since(c0);
    next = sampler.Sample(masked);  // sampling runs anyway: not the constraint's cost
    const auto c2 = std::chrono::steady_clock::now();
    if (Status s = constraint->Accept(next); !s.ok()) constraint_status = s;
    r.constraint_seconds += Since(c2);
  };
  auto pick = [&](int64_t, std::span<const float> logits) {
    sample(logits);
    if (logprobs != nullptr) next_logprob = LogprobOf(logits, next, options.top_logprobs);
  };

  const auto t0 = std::chrono::steady_clock::now();
  ProgressCallback progress;
  if (on_prefill) {
    progress = [&](int64_t done, int64_t total) { return on_prefill(keep + done, keep + total); };
  }
  Status prefilled;
  {
    std::optional<EngineGate::Turn> turn;
    if (options.batcher != nullptr) turn.emplace(options.batcher->engine().gate().Interactive());
    prefilled = session.Eval(prompt.subspan(keep), LogitsFor::kLast, pick, progress);
  }
  r.prefill_seconds = Since(t0);
  if (prefilled.code() == StatusCode::kCancelled) {
    r.finish = FinishReason::kCancelled;
    return r;
  }
  ELLM_RETURN_IF_ERROR(prefilled);

  const auto t1 = std::chrono::steady_clock::now();
  std::string& text = r.text;
  size_t released = 0;
  auto release = [&](size_t upto) {
    if (upto <= released) return true;
    const bool more = !on_text || on_text(std::string_view(text).substr(released, upto - released));
    released = upto;
    return more;
  };
  std::optional<DecodeBatcher::Member> member;
  if (options.batcher != nullptr) member.emplace(options.batcher->Join());
  for (;;) {
    ELLM_RETURN_IF_ERROR(constraint_status);
    if (tok.IsEndOfGeneration(next)) {
      r.finish = FinishReason::kStop;
      break;
    }
    if (r.completion_tokens >= options.max_tokens) {
      r.finish = FinishReason::kLength;
      break;
    }
    const size_t before = text.size();
    text += tok.TokenToPiece(next);
    if (logprobs != nullptr) {
      next_logprob.text_offset = before;
      logprobs->push_back(std::move(next_logprob));
    }
    sampler.Accept(next);
    ++r.completion_tokens;
    // A stop string ends the reply before it. One that completes now began
    // after the text released so far (that text was no stop string's start).
    size_t stop_at = std::string::npos;
    for (const std::string& s : options.stop) {
      const size_t from = std::max(released, before + 1 > s.size() ? before + 1 - s.size() : 0);
      const size_t f = text.find(s, from);
      if (f != std::string::npos) stop_at = std::min(stop_at, f);
    }
    if (stop_at != std::string::npos) {
      text.resize(stop_at);
      r.finish = FinishReason::kStop;
      break;
    }
    const size_t safe = CompleteUtf8Prefix(
        std::string_view(text).substr(0, text.size() - StopPrefixAtEnd(text, options.stop)));
    if (!release(safe)) {
      r.finish = FinishReason::kCancelled;
      r.decode_seconds = Since(t1);
      return r;
    }
    if (constraint != nullptr && constraint->Finished()) {
      r.finish = FinishReason::kStop;  // only an end token could follow
      break;
    }
    if (session.position() >= n_ctx) {
      r.finish = FinishReason::kLength;
      break;
    }
    TokenId cur = next;
    if (options.batcher != nullptr) {
      ELLM_RETURN_IF_ERROR(options.batcher->Decode(session, cur, pick));
    } else {
      ELLM_RETURN_IF_ERROR(session.Eval(std::span<const TokenId>(&cur, 1), LogitsFor::kLast, pick));
    }
  }
  member.reset();  // the others' steps no longer wait for this reply's
  // The rest, but never half a character.
  text.resize(std::max(released, CompleteUtf8Prefix(text)));
  if (logprobs != nullptr) {
    // Tokens whose piece a stop string (or a broken last character) cut off.
    while (!logprobs->empty() && logprobs->back().text_offset >= text.size()) {
      logprobs->pop_back();
    }
  }
  if (!release(text.size())) r.finish = FinishReason::kCancelled;
  r.decode_seconds = Since(t1);
  return r;
}

}  // namespace ellm

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

namespace {

// One reply: the state GenerateReply's steps share.
class ReplyRun {
 public:
  ReplyRun(Session& session, const Tokenizer& tok, std::span<const TokenId> prompt,
           const ReplyOptions& options, const ReplyTextFn& on_text,
           const ReplyProgressFn& on_prefill)
      : session_(session),
        tok_(tok),
        prompt_(prompt),
        options_(options),
        on_text_(on_text),
        on_prefill_(on_prefill),
        sampler_(options.sampling),
        constraint_(options.constraint) {}

  StatusOr<Reply> Run() {
    r_.prompt_tokens = static_cast<int64_t>(prompt_.size());
    const int64_t n_ctx = session_.n_ctx();
    if (prompt_.empty()) return InvalidArgumentError("the prompt is empty");
    if (r_.prompt_tokens >= n_ctx) {
      return OutOfRangeError("the prompt has " + std::to_string(r_.prompt_tokens) +
                             " tokens; the context holds " + std::to_string(n_ctx) +
                             " and leaves no room to reply");
    }
    // Keep what the session already holds of the prompt's start.
    if (options_.reuse_prefix) {
      keep_ = options_.reusable_prefix >= 0 ? options_.reusable_prefix
                                            : ReusablePrefix(session_, prompt_);
    }
    if (keep_ > 0 && keep_ < session_.position() && !session_.Truncate(keep_).ok()) keep_ = 0;
    if (keep_ == 0 && session_.position() > 0) session_.Reset();
    r_.reused_tokens = keep_;
    for (TokenId id : prompt_) sampler_.Accept(id);
    if (constraint_ != nullptr) constraint_->Reset();
    const auto t0 = std::chrono::steady_clock::now();
    Status prefilled = Prefill();
    r_.prefill_seconds = Since(t0);
    if (prefilled.code() == StatusCode::kCancelled) {
      r_.finish = FinishReason::kCancelled;
      return r_;
    }
    ELLM_RETURN_IF_ERROR(prefilled);
    const auto t1 = std::chrono::steady_clock::now();
    Status decoded = Decode();
    r_.decode_seconds = Since(t1);
    ELLM_RETURN_IF_ERROR(decoded);
    return r_;
  }

 private:
  void Sample(std::span<const float> logits) {
    if (constraint_ == nullptr) {
      next_ = sampler_.Sample(logits);
      return;
    }
    const auto c0 = std::chrono::steady_clock::now();
    masked_.assign(logits.begin(), logits.end());
    if (constraint_->Mask(masked_) == 0) {
      constraint_status_ = InternalError("constrained decoding: no token can continue the JSON");
      next_ = tok_.eos();
      return;
    }
    r_.constraint_seconds += Since(c0);
    next_ = sampler_.Sample(masked_);  // sampling runs anyway: not the constraint's cost
    const auto c2 = std::chrono::steady_clock::now();
    if (Status st = constraint_->Accept(next_); !st.ok()) constraint_status_ = st;
    r_.constraint_seconds += Since(c2);
  }

  LogitsCallback Pick() {
    return [this](int64_t, std::span<const float> logits) {
      Sample(logits);
      if (options_.logprobs != nullptr) {
        next_logprob_ = LogprobOf(logits, next_, options_.top_logprobs);
      }
    };
  }

  // The prompt after what was kept: in one evaluation, or in slices of
  // options.prefill_slice with on_prefill asked before each (cancellation,
  // an engine turn given up); CANCELLED when it says stop.
  Status Prefill() {
    ProgressCallback progress;
    if (on_prefill_) {
      progress = [this](int64_t done, int64_t total) {
        return on_prefill_(keep_ + done, keep_ + total);
      };
    }
    const std::span<const TokenId> rest = prompt_.subspan(static_cast<size_t>(keep_));
    std::optional<EngineGate::Turn> turn;
    if (options_.batcher != nullptr) turn.emplace(options_.batcher->engine().gate().Interactive());
    if (options_.prefill_slice <= 0) return session_.Eval(rest, LogitsFor::kLast, Pick(), progress);
    const auto total = static_cast<int64_t>(rest.size());
    for (int64_t at = 0; at < total; at += options_.prefill_slice) {
      if (on_prefill_ && !on_prefill_(keep_ + at, keep_ + total)) {
        return Status(StatusCode::kCancelled, "the prefill was cancelled");
      }
      const int64_t n = std::min(options_.prefill_slice, total - at);
      const bool last = at + n == total;
      ELLM_RETURN_IF_ERROR(
          session_.Eval(rest.subspan(static_cast<size_t>(at), static_cast<size_t>(n)),
                        last ? LogitsFor::kLast : LogitsFor::kNone, Pick()));
    }
    if (on_prefill_ && !on_prefill_(keep_ + total, keep_ + total)) {
      return Status(StatusCode::kCancelled, "the prefill was cancelled");
    }
    return OkStatus();
  }

  bool Release(size_t upto) {
    if (upto <= released_) return true;
    const bool more =
        !on_text_ || on_text_(std::string_view(r_.text).substr(released_, upto - released_));
    released_ = upto;
    return more;
  }

  // Where the reply ends in r_.text after the token just added, which
  // began at `before`: the first stop string, else the caller's stop_check;
  // npos when it goes on.
  size_t StopAt(size_t before) const {
    const std::string& text = r_.text;
    size_t stop_at = std::string::npos;
    // One that completes now began after the text released so far (that
    // text was no stop string's start).
    for (const std::string& st : options_.stop) {
      const size_t from = std::max(released_, before + 1 > st.size() ? before + 1 - st.size() : 0);
      const size_t f = text.find(st, from);
      if (f != std::string::npos) stop_at = std::min(stop_at, f);
    }
    if (stop_at == std::string::npos && options_.stop_check) stop_at = options_.stop_check(text);
    return stop_at;
  }

  // Adds `next_` to the text; false when the reply ends with it (r_.finish set).
  bool Append() {
    std::string& text = r_.text;
    const size_t before = text.size();
    text += tok_.TokenToPiece(next_);
    if (options_.logprobs != nullptr) {
      next_logprob_.text_offset = before;
      options_.logprobs->push_back(std::move(next_logprob_));
    }
    sampler_.Accept(next_);
    ++r_.completion_tokens;
    if (const size_t stop_at = StopAt(before); stop_at != std::string::npos) {
      text.resize(stop_at);
      r_.finish = FinishReason::kStop;
      return false;
    }
    const size_t safe = CompleteUtf8Prefix(
        std::string_view(text).substr(0, text.size() - StopPrefixAtEnd(text, options_.stop)));
    if (!Release(safe)) {
      r_.finish = FinishReason::kCancelled;
      cancelled_ = true;
      return false;
    }
    if (constraint_ != nullptr && constraint_->Finished()) {
      r_.finish = FinishReason::kStop;  // only an end token could follow
      return false;
    }
    if (session_.position() >= session_.n_ctx()) {
      r_.finish = FinishReason::kLength;
      return false;
    }
    return true;
  }

  Status Decode() {
    std::optional<DecodeBatcher::Member> member;
    if (options_.batcher != nullptr) member.emplace(options_.batcher->Join());
    for (;;) {
      ELLM_RETURN_IF_ERROR(constraint_status_);
      if (tok_.IsEndOfGeneration(next_)) {
        r_.finish = FinishReason::kStop;
        break;
      }
      if (r_.completion_tokens >= options_.max_tokens) {
        r_.finish = FinishReason::kLength;
        break;
      }
      if (!Append()) break;
      if (options_.on_step && !options_.on_step(r_.completion_tokens)) {
        r_.finish = FinishReason::kCancelled;
        cancelled_ = true;
        break;
      }
      TokenId cur = next_;
      if (options_.batcher != nullptr) {
        ELLM_RETURN_IF_ERROR(options_.batcher->Decode(session_, cur, Pick()));
      } else {
        ELLM_RETURN_IF_ERROR(
            session_.Eval(std::span<const TokenId>(&cur, 1), LogitsFor::kLast, Pick()));
      }
    }
    member.reset();  // the others' steps no longer wait for this reply's
    if (cancelled_) return OkStatus();
    // The rest, but never half a character.
    std::string& text = r_.text;
    text.resize(std::max(released_, CompleteUtf8Prefix(text)));
    if (options_.logprobs != nullptr) {
      // Tokens whose piece a stop string (or a broken last character) cut off.
      while (!options_.logprobs->empty() && options_.logprobs->back().text_offset >= text.size()) {
        options_.logprobs->pop_back();
      }
    }
    if (!Release(text.size())) r_.finish = FinishReason::kCancelled;
    return OkStatus();
  }

  Session& session_;
  const Tokenizer& tok_;
  std::span<const TokenId> prompt_;
  const ReplyOptions& options_;
  const ReplyTextFn& on_text_;
  const ReplyProgressFn& on_prefill_;
  Sampler sampler_;
  JsonConstraint* constraint_;
  Reply r_;
  int64_t keep_ = 0;
  TokenId next_ = -1;
  Status constraint_status_;
  std::vector<float> masked_;
  TokenLogprob next_logprob_;
  size_t released_ = 0;
  bool cancelled_ = false;
};

}  // namespace

StatusOr<Reply> GenerateReply(Session& session, const Tokenizer& tok,
                              std::span<const TokenId> prompt, const ReplyOptions& options,
                              const ReplyTextFn& on_text, const ReplyProgressFn& on_prefill) {
  return ReplyRun(session, tok, prompt, options, on_text, on_prefill).Run();
}

}  // namespace ellm

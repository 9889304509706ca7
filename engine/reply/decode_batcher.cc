#include "ellm/engine/decode_batcher.h"

#include <algorithm>
#include <vector>

#include "ellm/engine/engine_gate.h"

namespace ellm {

using Clock = std::chrono::steady_clock;

struct DecodeBatcher::Step {
  Session* session;
  TokenId token;
  Clock::time_point arrived;
  bool done = false;
  Status status;
  std::vector<float> logits;
};

DecodeBatcher::DecodeBatcher(Engine& engine, DecodeBatcherOptions options)
    : engine_(engine),
      options_(options),
      max_batch_(static_cast<size_t>(std::max(1, options.max_batch))) {}

DecodeBatcher::Member::~Member() {
  if (batcher_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(batcher_->mu_);
    --batcher_->members_;
  }
  // The others' pending steps may now be all there is to wait for.
  batcher_->cv_.notify_all();
}

DecodeBatcher::Member DecodeBatcher::Join() {
  std::lock_guard<std::mutex> lock(mu_);
  ++members_;
  return Member(this);
}

DecodeBatcher::Stats DecodeBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status DecodeBatcher::Decode(Session& session, TokenId token, const LogitsCallback& on_logits) {
  Step step{&session, token, Clock::now()};
  std::unique_lock<std::mutex> lock(mu_);
  pending_.push_back(&step);
  cv_.notify_all();
  while (!step.done) {
    if (running_ || pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // Lead a pass once every member has a token pending, the pass is full,
    // or the oldest pending token has waited long enough. The wait counts
    // from the end of the last pass at the earliest: tokens that arrived
    // while it ran wait for the members it just served, or the members
    // would settle into halves that take turns, each pass half full.
    const Clock::time_point due =
        std::max(pending_.front()->arrived, last_pass_end_) + options_.max_wait;
    if (pending_.size() >= static_cast<size_t>(std::max(1, members_)) ||
        pending_.size() >= max_batch_ || Clock::now() >= due) {
      RunBatch(lock);
    } else {
      cv_.wait_until(lock, due);
    }
  }
  lock.unlock();
  if (!step.status.ok()) return step.status;
  on_logits(0, step.logits);
  return OkStatus();
}

// Called with `lock` held and pending_ not empty; returns with it held.
void DecodeBatcher::RunBatch(std::unique_lock<std::mutex>& lock) {
  running_ = true;
  std::vector<Step*> batch;
  while (!pending_.empty() && batch.size() < max_batch_) {
    batch.push_back(pending_.front());
    pending_.pop_front();
  }
  lock.unlock();
  // A full session fails alone; the rest go through together.
  std::vector<Session*> sessions;
  std::vector<TokenId> tokens;
  std::vector<Step*> rows;
  for (Step* s : batch) {
    if (s->session->position() >= s->session->n_ctx()) {
      s->status = OutOfRangeError("context full: all " + std::to_string(s->session->n_ctx()) +
                                  " positions are used");
      continue;
    }
    sessions.push_back(s->session);
    tokens.push_back(s->token);
    rows.push_back(s);
  }
  Status st;
  if (!rows.empty()) {
    EngineGate::Turn turn = engine_.gate().Interactive();
    st = Session::EvalBatch(sessions, tokens, [&](int64_t i, std::span<const float> logits) {
      rows[static_cast<size_t>(i)]->logits.assign(logits.begin(), logits.end());
    });
  }
  lock.lock();
  for (Step* s : rows) s->status = st;
  for (Step* s : batch) s->done = true;
  if (!rows.empty()) {
    ++stats_.passes;
    stats_.rows += rows.size();
  }
  running_ = false;
  last_pass_end_ = Clock::now();
  cv_.notify_all();
}

}  // namespace ellm

// DecodeBatcher: the threads that each decode one reply step together, so
// that N concurrent streams cost about one pass over the weights per token
// rather than N (Session::EvalBatch). Decoding a token is memory-bound: the
// weights are read once whether one row or sixteen go through them.
//
// Each thread that decodes joins (Join) and then calls Decode once per
// token. A call waits until every member has a token pending (or until the
// oldest pending one has waited max_wait since it arrived or since the last
// pass ended, whichever is later, so a member busy elsewhere, e.g.
// writing to a slow client, delays the others by at most that), then one of
// the waiting threads runs them all under one interactive turn of the
// engine's gate and each caller gets its own logits back in its own
// thread (sampling stays parallel and private to the reply).
//
// Thread-safe. The sessions must belong to `engine` and each be used by
// one member at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "ellm/base/status.h"
#include "ellm/engine/engine.h"

namespace ellm {

struct DecodeBatcherOptions {
  int max_batch = 16;  // rows evaluated in one pass at most
  // How long a pending token may wait for the other members' tokens.
  std::chrono::microseconds max_wait{3000};
};

class DecodeBatcher {
 public:
  explicit DecodeBatcher(Engine& engine, DecodeBatcherOptions options = {});
  DecodeBatcher(const DecodeBatcher&) = delete;
  DecodeBatcher& operator=(const DecodeBatcher&) = delete;

  // Membership: while a Member lives, steps wait for its token too.
  class Member {
   public:
    Member(Member&& other) noexcept : batcher_(other.batcher_) { other.batcher_ = nullptr; }
    Member& operator=(Member&&) = delete;
    Member(const Member&) = delete;
    ~Member();

   private:
    friend class DecodeBatcher;
    explicit Member(DecodeBatcher* batcher) : batcher_(batcher) {}
    DecodeBatcher* batcher_;
  };
  Member Join();

  // Evaluates `token` at session.position() together with the other
  // members' pending tokens; on_logits(0, logits) runs in this thread.
  // REQUIRES: the caller holds a Member and no turn of engine.gate().
  // Errors are Session::EvalBatch's (a full session fails alone).
  Status Decode(Session& session, TokenId token, const LogitsCallback& on_logits);

  Engine& engine() const { return engine_; }

  struct Stats {
    uint64_t passes = 0;  // Session::EvalBatch calls
    uint64_t rows = 0;    // tokens they evaluated (rows / passes: the mean batch)
  };
  Stats stats() const;

 private:
  struct Step;
  void RunBatch(std::unique_lock<std::mutex>& lock);

  Engine& engine_;
  const DecodeBatcherOptions options_;
  const size_t max_batch_;  // options_.max_batch, at least 1
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int members_ = 0;
  bool running_ = false;
  std::chrono::steady_clock::time_point last_pass_end_{};
  std::deque<Step*> pending_;
  Stats stats_;
};

}  // namespace ellm

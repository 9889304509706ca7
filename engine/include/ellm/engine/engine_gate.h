// Turns on one engine. The sessions of one Engine share its threads (and
// its memory bandwidth), so one session evaluates at a time; the gate says
// whose turn it is. Interactive turns (a person waiting on the HTTP API) go
// before batch turns (documents from Kafka or the CLI). A batch turn calls
// Yield between prefill slices and decode steps: when an interactive turn
// is waiting it steps aside and resumes afterwards from its session's KV
// state, so nothing is recomputed and nothing is lost.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace ellm {

class EngineGate {
 public:
  // Holds a turn until destroyed. Movable, not copyable.
  class Turn {
   public:
    Turn(Turn&& other) noexcept : gate_(other.gate_), batch_(other.batch_) {
      other.gate_ = nullptr;
    }
    Turn& operator=(Turn&&) = delete;
    Turn(const Turn&) = delete;
    ~Turn();
    // Batch turns: lets waiting interactive turns go first, then takes the
    // turn back. Interactive turns: nothing to do. Call only between
    // evaluations (no session of this engine is evaluating in this thread).
    void Yield();

   private:
    friend class EngineGate;
    Turn(EngineGate* gate, bool batch) : gate_(gate), batch_(batch) {}
    EngineGate* gate_;
    bool batch_;
  };

  // Blocks until it is this caller's turn.
  Turn Interactive();
  Turn Batch();

  int interactive_waiting() const { return interactive_waiting_.load(); }
  // Times a batch turn stepped aside for an interactive one.
  long yields() const { return yields_.load(); }

 private:
  void AcquireBatch();
  void Release();

  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  std::atomic<int> interactive_waiting_{0};
  std::atomic<long> yields_{0};
};

}  // namespace ellm

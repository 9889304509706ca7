#include "ellm/engine/engine_gate.h"

namespace ellm {

EngineGate::Turn::~Turn() {
  if (gate_ != nullptr) gate_->Release();
}

void EngineGate::Turn::Yield() {
  if (gate_ == nullptr || !batch_ || gate_->interactive_waiting_.load() == 0) return;
  gate_->yields_.fetch_add(1);
  gate_->Release();
  gate_->AcquireBatch();
}

EngineGate::Turn EngineGate::Interactive() {
  std::unique_lock<std::mutex> lock(mu_);
  interactive_waiting_.fetch_add(1);
  cv_.wait(lock, [this] { return !held_; });
  interactive_waiting_.fetch_sub(1);
  held_ = true;
  return Turn(this, false);
}

EngineGate::Turn EngineGate::Batch() {
  AcquireBatch();
  return Turn(this, true);
}

void EngineGate::AcquireBatch() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !held_ && interactive_waiting_.load() == 0; });
  held_ = true;
}

void EngineGate::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
  }
  cv_.notify_all();
}

}  // namespace ellm

#include "kv/spill_prefetcher.h"

#include <string>
#include <utility>

namespace ellm::kv {

SpillPrefetcher::SpillPrefetcher(const SpillFile* file, size_t raw_bytes)
    : file_(file), raw_bytes_(raw_bytes), thread_([this] { ThreadMain(); }) {}

SpillPrefetcher::~SpillPrefetcher() {
  Cancel();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

Status SpillPrefetcher::Decode(size_t i, BlockDecoder& decoder, std::vector<uint8_t>& enc) const {
  const Item& it = items_[i];
  return file_->ReadBlock(it.offset, it.bytes, it.dst, raw_bytes_, decoder, enc, [&] {
    return "KV spill block " + std::to_string(it.block) + " of layer " + std::to_string(it.layer) +
           " in '" + file_->dir() + "' (prefetched)";
  });
}

void SpillPrefetcher::ThreadMain() {
  BlockDecoder decoder;
  std::vector<uint8_t> enc;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || next_ < limit_; });
    if (stop_) return;
    const size_t i = next_++;
    lock.unlock();
    // items_[i] does not change while claimed: the owner rewrites items_
    // only in Start, after every claimed item is done.
    Status s = Decode(i, decoder, enc);
    lock.lock();
    status_[i] = std::move(s);
    by_thread_[i] = true;
    if (++done_ == next_) done_cv_.notify_one();
  }
}

void SpillPrefetcher::Start(std::vector<Item> items) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_ = std::move(items);
    status_.assign(items_.size(), OkStatus());
    by_thread_.assign(items_.size(), false);
    next_ = done_ = 0;
    limit_ = items_.size();
  }
  busy_ = true;
  work_cv_.notify_one();
}

void SpillPrefetcher::WaitClaimed(std::unique_lock<std::mutex>& lock) {
  done_cv_.wait(lock, [&] { return done_ == next_; });
}

SpillPrefetcher::Outcome SpillPrefetcher::Finish(BlockDecoder& decoder) {
  Outcome out;
  std::unique_lock<std::mutex> lock(mu_);
  while (next_ < limit_) {
    const size_t i = next_++;
    lock.unlock();
    Status s = Decode(i, decoder, caller_enc_);
    lock.lock();
    status_[i] = std::move(s);
    ++done_;
  }
  WaitClaimed(lock);
  out.status = std::move(status_);
  out.by_thread = std::move(by_thread_);
  limit_ = next_;
  busy_ = false;
  return out;
}

void SpillPrefetcher::Cancel() {
  if (!busy_) return;
  std::unique_lock<std::mutex> lock(mu_);
  limit_ = next_;
  WaitClaimed(lock);
  busy_ = false;
}

void SpillPrefetcher::WaitForThreadForTest() {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return next_ == limit_ && done_ == next_; });
}

}  // namespace ellm::kv

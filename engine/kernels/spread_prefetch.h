// Brings a byte range into the cache a few lines at a time, spread over a
// kernel's inner loop, so the requests for the next tile overlap the work
// on this one instead of arriving as one burst (which fills every miss
// buffer and stalls the loads of the work itself). Measured on the Zen 5
// VM, decode attention over 96 MB of f16 K/V on one thread: no prefetch
// 5.4 GB/s, the next tile asked for in one burst 6.8, spread 9.5.
// Hints only: never changes a result.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ellm::kernels {

class SpreadPrefetch {
 public:
  // [p, p + bytes) over `steps` calls of Step() (at least one line a step).
  SpreadPrefetch(const void* p, int64_t bytes, int64_t steps)
      : p_(static_cast<const char*>(p)),
        end_(p_ == nullptr ? p_ : p_ + std::max<int64_t>(0, bytes)) {
    const int64_t lines = (end_ - p_ + kLine - 1) / kLine;
    per_step_ =
        static_cast<int>(std::max<int64_t>(1, (lines + steps - 1) / std::max<int64_t>(1, steps)));
  }
  void Step() {
    for (int i = 0; i < per_step_ && p_ < end_; ++i, p_ += kLine) __builtin_prefetch(p_, 0, 2);
  }
  // Whatever the steps did not reach (a loop shorter than announced).
  void Finish() {
    for (; p_ < end_; p_ += kLine) __builtin_prefetch(p_, 0, 2);
  }

 private:
  static constexpr int kLine = 64;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  int per_step_ = 1;
};

}  // namespace ellm::kernels

// Hang guards for tests that check that hostile input ends (a step budget, a
// size cap), not how fast: they measure the calling thread's CPU time, which
// other processes on a busy CI machine do not add to, and allow many times
// what the work takes. Speed is measured by benchmarks, never by tests.
#pragma once

#include <time.h>

#include "ellm/base/sanitizers.h"

namespace ellm::testing {

// CPU seconds the calling thread has used.
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// How much slower ASan+UBSan builds run interpreter-like code (measured
// about sevenfold; the guard leaves room).
#if ELLM_ASAN
inline constexpr double kSanitizerSlowdown = 15;
#else
inline constexpr double kSanitizerSlowdown = 1;
#endif

}  // namespace ellm::testing

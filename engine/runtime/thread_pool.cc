// ThreadPool: one generation counter wakes the workers, one pending counter
// tells the caller they are done. Both are 32-bit atomics that threads spin
// on briefly and then sleep on with futex(2); a waker only makes the futex
// syscall when someone has announced it is asleep, so back-to-back calls on
// busy workers stay in user space.
//
// Lost-wakeup argument (both pairs use seq_cst, Dekker style): a sleeper
// increments its "sleeping" count and then re-reads the counter; a waker
// changes the counter and then reads the sleeping count. One of them must see
// the other's write, and FUTEX_WAIT itself re-checks the value in the kernel.
#include "ellm/engine/thread_pool.h"

#include <immintrin.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <thread>

namespace ellm {
namespace {

void FutexWait(std::atomic<uint32_t>& word, uint32_t expected) {
  // Returns on a wake, a signal, or at once if the word no longer equals
  // `expected`; callers re-check in a loop.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex(2) needs a plain 32-bit word");

// Spins until `pred()` holds or `spin` has elapsed; returns pred()'s last value.
template <typename Pred>
bool SpinUntil(Pred pred, std::chrono::microseconds spin) {
  if (pred()) return true;
  auto deadline = std::chrono::steady_clock::now() + spin;
  for (;;) {
    // Reading the clock costs ~20 ns; 64 pauses between reads keep it in the noise.
    for (int k = 0; k < 64; ++k) {
      if (pred()) return true;
      _mm_pause();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

}  // namespace

struct ThreadPool::Impl {
  // Written by the caller, read by workers. Its own cache line so the
  // workers' polling does not bounce with the pending counter's writes.
  alignas(64) std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> sleeping_workers{0};
  std::atomic<bool> stop{false};
  // Plain fields published by the release increment of `generation`.
  const std::function<void(int, int)>* fn = nullptr;
  // A ParallelFor job: chunks are claimed dynamically, so the caller never
  // waits for a worker that has not started (a descheduled worker on a busy
  // machine would otherwise stall every call by a scheduler time slice).
  // The generation's low bit tells the kind of job (1: ParallelFor), so a
  // worker reads the kind and the generation in one atomic load.
  const std::function<void(int64_t, int64_t)>* for_fn = nullptr;
  int64_t for_n = 0;
  uint32_t for_chunks = 0;  // the caller's copy; workers read the claim word
  // generation << 32 | total chunks << 16 | next unclaimed chunk. A claim
  // succeeds only for the generation the claimer woke for, so a late worker
  // never touches a finished job; a claimed chunk keeps its job (for_fn,
  // for_n) alive until it is counted done.
  alignas(64) std::atomic<uint64_t> claim{0};
  alignas(64) std::atomic<uint32_t> chunks_done{0};

  alignas(64) std::atomic<uint32_t> pending{0};  // workers yet to finish this call
  std::atomic<uint32_t> caller_sleeping{0};

  int n_threads = 1;
  std::chrono::microseconds spin{0};
  std::vector<std::thread> workers;  // index i-1 is worker i
  Status pinning;

  void WorkerMain(int index);
  void WaitForWorkers();
  // Claims and runs chunks of generation `gen` until none are left.
  void RunChunks(uint32_t gen);
  void WaitForChunks();
};

void ThreadPool::Impl::RunChunks(uint32_t gen) {
  for (;;) {
    uint64_t c = claim.load(std::memory_order_acquire);
    uint32_t chunk = 0, total = 0;
    do {
      if (static_cast<uint32_t>(c >> 32) != gen) return;
      chunk = static_cast<uint32_t>(c & 0xffff);
      total = static_cast<uint32_t>((c >> 16) & 0xffff);
      if (chunk >= total) return;
    } while (!claim.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                          std::memory_order_acquire));
    const int64_t base = for_n / total, extra = for_n % total;
    const int64_t begin = chunk * base + std::min<int64_t>(chunk, extra);
    (*for_fn)(begin, begin + base + (chunk < extra ? 1 : 0));
    if (chunks_done.fetch_add(1, std::memory_order_seq_cst) + 1 == total &&
        caller_sleeping.load(std::memory_order_seq_cst) != 0) {
      FutexWakeAll(chunks_done);
    }
  }
}

void ThreadPool::Impl::WaitForChunks() {
  auto done = [&] { return chunks_done.load(std::memory_order_acquire) == for_chunks; };
  if (SpinUntil(done, spin)) return;
  caller_sleeping.store(1, std::memory_order_seq_cst);
  for (uint32_t got; (got = chunks_done.load(std::memory_order_seq_cst)) != for_chunks;) {
    FutexWait(chunks_done, got);
  }
  caller_sleeping.store(0, std::memory_order_relaxed);
}

void ThreadPool::Impl::WorkerMain(int index) {
  uint32_t seen = 0;
  for (;;) {
    auto changed = [&] { return generation.load(std::memory_order_acquire) != seen; };
    if (!SpinUntil(changed, spin)) {
      sleeping_workers.fetch_add(1, std::memory_order_seq_cst);
      while (generation.load(std::memory_order_seq_cst) == seen) FutexWait(generation, seen);
      sleeping_workers.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = generation.load(std::memory_order_acquire);
    if (stop.load(std::memory_order_acquire)) return;
    if (seen & 1u) {
      RunChunks(seen);
      continue;
    }
    (*fn)(index, n_threads);
    if (pending.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping.load(std::memory_order_seq_cst) != 0) {
      FutexWakeAll(pending);
    }
  }
}

void ThreadPool::Impl::WaitForWorkers() {
  auto done = [&] { return pending.load(std::memory_order_acquire) == 0; };
  if (SpinUntil(done, spin)) return;
  caller_sleeping.store(1, std::memory_order_seq_cst);
  for (uint32_t left; (left = pending.load(std::memory_order_seq_cst)) != 0;) {
    FutexWait(pending, left);
  }
  caller_sleeping.store(0, std::memory_order_relaxed);
}

ThreadPool::ThreadPool(const Options& options) : impl_(std::make_unique<Impl>()) {
  int n = options.threads;
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->n_threads = n;
  impl_->spin = std::chrono::microseconds(std::max(0, options.spin_us));
  impl_->workers.reserve(n - 1);
  for (int i = 1; i < n; ++i) {
    impl_->workers.emplace_back([impl = impl_.get(), i] { impl->WorkerMain(i); });
    if (options.cpus.empty()) continue;
    int cpu = options.cpus[i % options.cpus.size()];
    std::string err;
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      err = "is not a valid CPU number";
    } else {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      int rc = pthread_setaffinity_np(impl_->workers.back().native_handle(), sizeof(set), &set);
      if (rc != 0) err = std::strerror(rc);
    }
    if (!err.empty() && impl_->pinning.ok()) {
      impl_->pinning = InvalidArgumentError("thread pool: cannot pin worker " + std::to_string(i) +
                                            " to CPU " + std::to_string(cpu) + ": " + err);
    }
  }
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_relaxed);
  impl_->generation.fetch_add(1, std::memory_order_seq_cst);
  if (impl_->sleeping_workers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(impl_->generation);
  for (std::thread& t : impl_->workers) t.join();
}

int ThreadPool::size() const { return impl_->n_threads; }

const Status& ThreadPool::pinning_status() const { return impl_->pinning; }

void ThreadPool::Run(const std::function<void(int, int)>& fn) {
  Impl& p = *impl_;
  if (p.n_threads == 1) {
    fn(0, 1);
    return;
  }
  p.fn = &fn;
  p.pending.store(static_cast<uint32_t>(p.n_threads - 1), std::memory_order_relaxed);
  // Next even generation: a Run job.
  const uint32_t gen = (p.generation.load(std::memory_order_relaxed) | 1u) + 1;
  p.generation.store(gen, std::memory_order_seq_cst);
  if (p.sleeping_workers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(p.generation);
  fn(0, p.n_threads);
  p.WaitForWorkers();
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  Impl& p = *impl_;
  // Several chunks per thread so that threads that finish early (or start
  // late) even out the work; each chunk is still >= grain.
  const int64_t chunks =
      std::clamp<int64_t>(n / grain, 1, std::min<int64_t>(int64_t{p.n_threads} * 4, 0xffff));
  if (chunks == 1 || p.n_threads == 1) {
    fn(0, n);
    return;
  }
  // Next odd generation: a ParallelFor job.
  const uint32_t gen = (p.generation.load(std::memory_order_relaxed) + 1) | 1u;
  p.for_fn = &fn;
  p.for_n = n;
  p.for_chunks = static_cast<uint32_t>(chunks);
  p.chunks_done.store(0, std::memory_order_relaxed);
  p.claim.store(static_cast<uint64_t>(gen) << 32 | static_cast<uint64_t>(chunks) << 16,
                std::memory_order_release);
  p.generation.store(gen, std::memory_order_seq_cst);
  if (p.sleeping_workers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(p.generation);
  p.RunChunks(gen);
  p.WaitForChunks();
}

}  // namespace ellm

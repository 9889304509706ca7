// ThreadPool: a fixed set of worker threads, created once, that run one
// parallel loop at a time. No thread is created per call. Workers may be
// pinned to CPUs (from a list the caller gives, e.g. one NUMA node's cores).
//
// Dispatch is built for thousands of calls per second (one per matrix
// product during decode): idle workers spin on a generation counter for
// Options.spin_us, then sleep on a futex, so a pool left idle costs no CPU.
//
// Thread safety: Run() may be called from one thread at a time (the thread
// that owns the pool; the engine's forward pass). The calling thread takes
// part in the work as worker 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ellm/base/status.h"

namespace ellm {

class ThreadPool {
 public:
  struct Options {
    int threads = 0;        // total including the caller; 0 = hardware concurrency
    std::vector<int> cpus;  // pin worker i to cpus[i % size]; empty = no pinning
    // How long an idle thread busy-waits for the next call before sleeping.
    // Longer keeps back-to-back calls fast; shorter frees the core sooner.
    int spin_us = 100;
  };
  // Workers 1..threads-1 are created and pinned here. The calling thread
  // (worker 0) is not pinned: its affinity belongs to its owner. Pinning
  // failures do not abort; see pinning_status().
  explicit ThreadPool(const Options& options);
  // Wakes and joins every worker. REQUIRES: no Run() in progress.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;

  // OK if every requested pin was applied; otherwise names the CPU and the
  // reason (e.g. a CPU outside this process's cpuset). Unpinned workers
  // still run.
  const Status& pinning_status() const;

  // Calls fn(thread_index, n_threads) once on every thread (the caller is
  // index 0) and returns when all have finished; everything fn wrote is
  // visible to the caller then. fn must not call Run() and must not throw.
  void Run(const std::function<void(int thread, int n_threads)>& fn);

  // Splits [0, n) into contiguous chunks of at least `grain` (one chunk of n
  // when n < grain; up to 4 per thread) and calls fn(begin, end) once per
  // chunk. Threads claim chunks as they arrive, so the call returns as soon
  // as every chunk is done, without waiting for a worker that never woke.
  // n <= 0 calls nothing.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // A ParallelFor grain for rows of `row_elems` elements of light per-element
  // work (norms, activation encoding, RoPE): at least kMinChunkElems
  // elements per chunk. Below that, waking a worker costs more than the
  // work: batched decode's 8-row norms ran as 8 chunks of 640 elements.
  static constexpr int64_t kMinChunkElems = 16384;
  static int64_t RowGrain(int64_t row_elems) {
    return row_elems >= kMinChunkElems ? 1 : kMinChunkElems / (row_elems > 0 ? row_elems : 1);
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ellm

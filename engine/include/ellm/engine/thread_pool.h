// ThreadPool: a fixed set of worker threads, created once, that run one
// parallel loop at a time. No thread is created per call. Workers may be
// pinned to CPUs (from a list the caller gives, e.g. one NUMA node's cores).
//
// Thread safety: Run() may be called from one thread at a time (the thread
// that owns the pool; the engine's forward pass). The calling thread takes
// part in the work as worker 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ellm {

class ThreadPool {
 public:
  struct Options {
    int threads = 0;        // total including the caller; 0 = hardware concurrency
    std::vector<int> cpus;  // pin worker i to cpus[i % size]; empty = no pinning
  };
  explicit ThreadPool(const Options& options);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;

  // Calls fn(thread_index, n_threads) once on every thread (the caller is
  // index 0) and returns when all have finished. fn must not call Run().
  void Run(const std::function<void(int thread, int n_threads)>& fn);

  // Splits [0, n) into chunks of at least `grain` and calls fn(begin, end)
  // on the pool's threads; returns when all are done.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ellm

// Dispatch cost of the engine's thread pool: the round trip of a Run() whose
// work is empty (wake the workers, run nothing, wait for them). It is paid
// once per matrix product, thousands of times per second during decode.
#include <benchmark/benchmark.h>

#include <atomic>

#include "ellm/engine/thread_pool.h"

static void BM_ThreadPoolEmptyRun(benchmark::State& state) {
  ellm::ThreadPool::Options o;
  o.threads = static_cast<int>(state.range(0));
  ellm::ThreadPool pool(o);
  for (auto _ : state) pool.Run([](int, int) {});
  state.counters["threads"] = pool.size();
}
BENCHMARK(BM_ThreadPoolEmptyRun)->Arg(2)->UseRealTime();

// The same with workers that always sleep between calls (spin_us = 0): the
// futex wake/wait path, the cost after any pause longer than the spin.
static void BM_ThreadPoolEmptyRunNoSpin(benchmark::State& state) {
  ellm::ThreadPool::Options o;
  o.threads = static_cast<int>(state.range(0));
  o.spin_us = 0;
  ellm::ThreadPool pool(o);
  for (auto _ : state) pool.Run([](int, int) {});
}
BENCHMARK(BM_ThreadPoolEmptyRunNoSpin)->Arg(2)->UseRealTime();

static void BM_ThreadPoolParallelFor(benchmark::State& state) {
  ellm::ThreadPool::Options o;
  o.threads = 2;
  ellm::ThreadPool pool(o);
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    pool.ParallelFor(state.range(0), 1, [&](int64_t b, int64_t e) { sink.fetch_add(e - b); });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_ThreadPoolParallelFor)->Arg(1024)->UseRealTime();

#include "ellm/engine/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace ellm {
namespace {

using namespace std::chrono_literals;

// Runs `body` and aborts the test binary if it takes longer than `limit`: a
// deadlocked pool would otherwise hang the suite until ctest's timeout.
template <typename F>
void WithDeadline(std::chrono::seconds limit, F body) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, limit, [&] { return done; })) {
      std::fprintf(stderr, "thread_pool_test: deadline of %llds exceeded (deadlock?)\n",
                   static_cast<long long>(limit.count()));
      std::abort();
    }
  });
  body();
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_one();
  watchdog.join();
}

ThreadPool::Options Threads(int n, int spin_us = 100) {
  ThreadPool::Options o;
  o.threads = n;
  o.spin_us = spin_us;
  return o;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnceInContiguousChunks) {
  WithDeadline(120s, [] {
    for (int threads : {1, 2, 3, 5}) {
      ThreadPool pool(Threads(threads));
      for (int64_t n : {0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 1001, 4099}) {
        for (int64_t grain : {-1, 0, 1, 2, 3, 7, 64, 1000, 5000}) {
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          std::mutex mu;
          std::vector<std::pair<int64_t, int64_t>> chunks;
          pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
            std::lock_guard lock(mu);
            chunks.emplace_back(begin, end);
          });
          SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n) +
                       " grain=" + std::to_string(grain));
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
          if (n == 0) {
            EXPECT_TRUE(chunks.empty());
            continue;
          }
          EXPECT_LE(chunks.size(), static_cast<size_t>(4 * threads));
          std::sort(chunks.begin(), chunks.end());
          int64_t min_len = std::min<int64_t>(std::max<int64_t>(grain, 1), n);
          int64_t expect_begin = 0;
          for (auto [begin, end] : chunks) {
            EXPECT_EQ(begin, expect_begin);
            EXPECT_GE(end - begin, min_len);
            expect_begin = end;
          }
          EXPECT_EQ(expect_begin, n);
        }
      }
    }
  });
}

TEST(ThreadPool, ParallelForSplitsIntoSeveralChunksPerThread) {
  ThreadPool pool(Threads(3));
  std::atomic<int> chunks{0};
  pool.ParallelFor(300, 10, [&](int64_t, int64_t) { chunks.fetch_add(1); });
  EXPECT_EQ(chunks.load(), 12);
}

TEST(ThreadPool, RunCallsEveryThreadOnceWithDistinctIndices) {
  WithDeadline(60s, [] {
    for (int threads : {1, 2, 4}) {
      ThreadPool pool(Threads(threads));
      ASSERT_EQ(pool.size(), threads);
      std::vector<std::atomic<int>> calls(threads);
      std::vector<std::thread::id> ids(threads);  // plain writes: Run must publish them
      std::atomic<int> bad_n{0};
      pool.Run([&](int t, int n) {
        if (n != threads || t < 0 || t >= n) {
          bad_n.fetch_add(1);
          return;
        }
        calls[t].fetch_add(1);
        ids[t] = std::this_thread::get_id();
      });
      EXPECT_EQ(bad_n.load(), 0);
      for (int t = 0; t < threads; ++t) EXPECT_EQ(calls[t].load(), 1) << "thread " << t;
      EXPECT_EQ(ids[0], std::this_thread::get_id()) << "the caller is thread 0";
      std::vector<std::thread::id> sorted = ids;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "threads are distinct";
    }
  });
}

TEST(ThreadPool, ZeroThreadsMeansHardwareConcurrency) {
  ThreadPool pool(Threads(0));
  EXPECT_EQ(pool.size(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// Many back-to-back calls: the spinning path (spin_us = 100), the sleeping
// path every time (spin_us = 0), and more threads than CPUs.
TEST(ThreadPool, ThousandsOfConsecutiveRunsLoseNoWakeups) {
  WithDeadline(120s, [] {
    for (auto [threads, spin_us] : {std::pair{2, 100}, {2, 0}, {4, 100}, {4, 0}}) {
      ThreadPool pool(Threads(threads, spin_us));
      std::vector<int64_t> per_thread(threads, 0);  // plain: each slot has one writer
      constexpr int kRuns = 5000;
      for (int r = 0; r < kRuns; ++r) {
        pool.Run([&](int t, int) { ++per_thread[t]; });
      }
      for (int t = 0; t < threads; ++t) {
        EXPECT_EQ(per_thread[t], kRuns) << "threads=" << threads << " spin_us=" << spin_us;
      }
    }
  });
}

// Pauses longer than the spin make every call wake sleeping workers.
TEST(ThreadPool, WakesWorkersThatWentToSleep) {
  WithDeadline(60s, [] {
    ThreadPool pool(Threads(2, /*spin_us=*/1));
    std::atomic<int> calls{0};
    for (int r = 0; r < 300; ++r) {
      std::this_thread::sleep_for(200us);
      pool.Run([&](int, int) { calls.fetch_add(1); });
    }
    EXPECT_EQ(calls.load(), 600);
  });
}

TEST(ThreadPool, PinsWorkersToTheGivenCpus) {
  std::vector<int> allowed = AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs in this process's affinity mask";
  ThreadPool::Options o = Threads(3);
  o.cpus = {allowed[1], allowed[0]};  // worker i -> cpus[i % 2]
  cpu_set_t caller_before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(caller_before), &caller_before), 0);
  ThreadPool pool(o);
  ASSERT_TRUE(pool.pinning_status().ok()) << pool.pinning_status().ToString();

  std::vector<std::vector<int>> affinity(3);
  std::vector<int> ran_on(3, -1);
  for (int rep = 0; rep < 20; ++rep) {
    pool.Run([&](int t, int) {
      cpu_set_t set;
      CPU_ZERO(&set);
      if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return;
      affinity[t].clear();
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) affinity[t].push_back(c);
      ran_on[t] = sched_getcpu();
    });
    for (int t = 1; t < 3; ++t) {
      int want = o.cpus[t % 2];
      ASSERT_EQ(affinity[t], std::vector<int>{want}) << "worker " << t;
      ASSERT_EQ(ran_on[t], want) << "worker " << t;
    }
  }
  cpu_set_t caller_after;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(caller_after), &caller_after), 0);
  EXPECT_TRUE(CPU_EQUAL(&caller_before, &caller_after)) << "the caller's affinity is left alone";
}

TEST(ThreadPool, ReportsAnImpossiblePinAndStillRuns) {
  ThreadPool::Options o = Threads(2);
  o.cpus = {0, -1};
  ThreadPool pool(o);
  EXPECT_FALSE(pool.pinning_status().ok());
  EXPECT_NE(pool.pinning_status().ToString().find("CPU -1"), std::string::npos)
      << pool.pinning_status().ToString();
  std::atomic<int> calls{0};
  pool.Run([&](int, int) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 2);
}

TEST(ThreadPool, SingleThreadPoolRunsOnTheCaller) {
  ThreadPool pool(Threads(1));
  EXPECT_EQ(pool.size(), 1);
  std::thread::id ran_on;
  int calls = 0;
  pool.Run([&](int t, int n) {
    EXPECT_EQ(t, 0);
    EXPECT_EQ(n, 1);
    ran_on = std::this_thread::get_id();
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.ParallelFor(100, 1, [&](int64_t b, int64_t e) { chunks.emplace_back(b, e); });
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0], (std::pair<int64_t, int64_t>{0, 100}));
}

TEST(ThreadPool, DestroysCleanlyWhileIdle) {
  WithDeadline(60s, [] {
    // Right after construction (workers may not have started yet).
    for (int i = 0; i < 50; ++i) ThreadPool pool(Threads(3));
    // Right after a call, while workers spin.
    for (int i = 0; i < 50; ++i) {
      ThreadPool pool(Threads(3));
      pool.Run([](int, int) {});
    }
    // After workers have gone to sleep on the futex.
    ThreadPool pool(Threads(3, /*spin_us=*/0));
    pool.Run([](int, int) {});
    std::this_thread::sleep_for(20ms);
  });
}

}  // namespace
}  // namespace ellm

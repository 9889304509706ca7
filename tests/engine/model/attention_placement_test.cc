// Attention steered by a NUMA plan on fake 2- and 4-node machines: every
// task of KV head h runs on a thread of the node holding h's slices, each of
// those threads takes part, and the outputs equal the unsteered run's bit
// for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <utility>

#include "ellm/engine/numa.h"
#include "ellm/engine/thread_pool.h"
#include "model/attention.h"

namespace ellm::model {
namespace {

constexpr int kHeads = 8, kKvHeads = 4, kDim = 64;
const std::vector<int> kWindows = {0, 128, 0};

struct Record {
  int layer, thread, kv_head;
};

// Prefill in micro-batches of 96, then 8 one-token steps, every layer;
// returns all outputs. With `plan`, each layer's placement comes from it and
// every steered task is appended to *records.
std::vector<float> RunLayers(int threads, const NumaPlan* plan, std::vector<Record>* records) {
  kv::KvCacheOptions ko;
  ko.n_head_kv = kKvHeads;
  ko.head_dim_k = kDim;
  ko.head_dim_v = kDim;
  ko.windows = kWindows;
  ko.n_ctx = 700;
  ko.micro_batch = 96;
  ko.type = KvType::kF16;
  auto cache = kv::KvCache::Create(ko);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  ThreadPool pool({.threads = threads});
  AttentionScratch scratch;
  std::vector<std::vector<Record>> per_thread(static_cast<size_t>(threads));
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> all, k(kKvHeads * kDim), v(kKvHeads * kDim);
  for (int64_t pos0 = 0; pos0 < 608;) {
    const int64_t m = pos0 < 600 ? std::min<int64_t>(96, 600 - pos0) : 1;
    for (int il = 0; il < static_cast<int>(kWindows.size()); ++il) {
      for (int64_t t = pos0; t < pos0 + m; ++t) {
        for (float& x : k) x = nd(rng);
        for (float& x : v) x = nd(rng);
        EXPECT_TRUE((*cache)->Store(il, t, k.data(), v.data()).ok());
      }
      std::vector<float> q(m * kHeads * kDim), out(m * kHeads * kDim);
      for (float& x : q) x = nd(rng) * 0.3f;
      AttentionPlacement placement;
      if (plan != nullptr) {
        placement = PlacementForLayer(*plan, il);
        // Each thread appends to its own list: no locking on the hot path.
        placement.on_task = [&, il](int thread, int kvh) {
          per_thread[static_cast<size_t>(thread)].push_back({il, thread, kvh});
        };
      }
      EXPECT_TRUE(Attention({kHeads, kKvHeads, kDim, kDim, kWindows[il]}, **cache, il, q.data(), m,
                            pos0, out.data(), pool, scratch, placement)
                      .ok());
      all.insert(all.end(), out.begin(), out.end());
    }
    pos0 += m;
  }
  if (records != nullptr) {
    for (auto& list : per_thread) records->insert(records->end(), list.begin(), list.end());
  }
  return all;
}

class AttentionPlacementTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(AttentionPlacementTest, RunsEachKvHeadOnItsNodesThreadsWithUnchangedResults) {
  const auto [nodes, threads] = GetParam();
  StaticTopology topo = FakeTopology(nodes, 2);
  auto plan =
      PlanNuma(topo, NumaMode::kDistribute, threads, static_cast<int>(kWindows.size()), kKvHeads);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->nodes.size(), static_cast<size_t>(nodes));
  std::vector<Record> records;
  const std::vector<float> got = RunLayers(threads, &*plan, &records);
  ASSERT_FALSE(records.empty());
  std::set<std::tuple<int, int, int>> ran;  // (layer, kv head, thread)
  for (const Record& r : records) {
    ASSERT_EQ(plan->ThreadNode(r.thread), plan->KvNode(r.layer, r.kv_head))
        << "layer " << r.layer << " head " << r.kv_head << " ran on thread " << r.thread;
    ran.insert({r.layer, r.kv_head, r.thread});
  }
  // Static dealing: every thread of the head's node takes part.
  for (int il = 0; il < static_cast<int>(kWindows.size()); ++il) {
    for (int h = 0; h < kKvHeads; ++h) {
      const ThreadRange range = plan->KvHeadThreads(il, h);
      for (int t = range.begin; t < range.end; ++t) {
        EXPECT_TRUE(ran.count({il, h, t})) << "layer " << il << " head " << h << " thread " << t;
      }
    }
  }
  const std::vector<float> want = RunLayers(threads, nullptr, nullptr);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

// (nodes, threads): one or two threads per node, and an uneven 2 + 1.
INSTANTIATE_TEST_SUITE_P(FakeNodes, AttentionPlacementTest,
                         ::testing::Values(std::pair{2, 2}, std::pair{2, 3}, std::pair{2, 4},
                                           std::pair{4, 4}, std::pair{4, 8}));

TEST(AttentionPlacement, OneNodeOrOffDoesNotSteer) {
  StaticTopology one = FakeTopology(1, 2);
  auto plan = PlanNuma(one, NumaMode::kDistribute, 2, 3, kKvHeads);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(PlacementForLayer(*plan, 0).kv_head_threads.empty());
  auto off = PlanNuma(FakeTopology(2, 2), NumaMode::kOff, 2, 3, kKvHeads);
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(PlacementForLayer(*off, 0).kv_head_threads.empty());
}

}  // namespace
}  // namespace ellm::model

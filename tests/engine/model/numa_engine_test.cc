// NUMA placement through the engine, on the real model and a fake
// multi-node machine: every KV slice is asked for on the node the plan
// gives its (layer, KV head), and the results do not change.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <map>

#include "ellm/engine/engine.h"
#include "ellm/engine/numa.h"
#include "ellm/engine/numa_memory.h"
#include "test_env.h"

namespace ellm {
namespace {

std::vector<TokenId> Text(Engine& e, int n) {
  std::string s;
  while (static_cast<int>(e.tokenizer().Encode(s, true, false).size()) < n) {
    s += "The board approved the budget for the new plant in Porto; construction starts in May. ";
  }
  auto ids = e.tokenizer().Encode(s, true, false);
  ids.resize(static_cast<size_t>(n));
  return ids;
}

std::vector<float> LastLogits(Engine& e, const std::vector<TokenId>& ids) {
  auto session = e.NewSession({.n_ctx = 1024});
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> out;
  EXPECT_TRUE((*session)
                  ->Eval(ids, LogitsFor::kLast,
                         [&](int64_t, std::span<const float> l) { out.assign(l.begin(), l.end()); })
                  .ok());
  return out;
}

TEST(NumaEngine, DistributePutsEveryKvSliceOnItsPlannedNode) {
  ELLM_REQUIRE_MODEL(path);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  // Two fake nodes of one CPU each (CPUs 0 and 1 exist here, so pinning works).
  StaticTopology two = FakeTopology(2, 1);
  RecordingNodeMemory memory;
  EngineOptions o{.threads = 2, .numa = NumaMode::kDistribute};
  o.topology = &two;
  o.node_memory = &memory;
  auto numa = Engine::Load(path, o);
  ASSERT_TRUE(numa.ok()) << numa.status().ToString();
  const NumaPlan& plan = (*numa)->numa_plan();
  EXPECT_EQ(plan.cpus, (std::vector<int>{0, 1}));
  const auto ids = Text(**numa, 600);
  const auto got = LastLogits(**numa, ids);

  // 600 positions touch blocks 0..2 of every layer: 3 slices per layer (one KV head).
  std::map<int, int> want, asked;
  for (int il = 0; il < (*numa)->info().n_layer; ++il) want[plan.KvNode(il, 0)] += 3;
  for (const auto& r : memory.requests()) asked[r.node] += 1;
  EXPECT_EQ(asked, want);
  EXPECT_EQ(want.size(), 2u) << "both nodes hold some layers";
  for (const auto& r : memory.requests()) EXPECT_TRUE(r.freed);

  auto plain = Engine::Load(path, {.threads = 2});
  ASSERT_TRUE(plain.ok());
  const auto want_logits = LastLogits(**plain, ids);
  EXPECT_EQ(std::memcmp(got.data(), want_logits.data(), got.size() * sizeof(float)), 0);
  sched_setaffinity(0, sizeof(saved), &saved);
}

TEST(NumaEngine, IsolateAsksForTheChosenNode) {
  ELLM_REQUIRE_MODEL(path);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  StaticTopology two = FakeTopology(2, 1);
  RecordingNodeMemory memory;
  EngineOptions o{.threads = 1, .numa = NumaMode::kIsolate, .numa_node = 1};
  o.topology = &two;
  o.node_memory = &memory;
  auto e = Engine::Load(path, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->numa_plan().cpus, (std::vector<int>{1}));
  LastLogits(**e, Text(**e, 300));
  ASSERT_FALSE(memory.requests().empty());
  for (const auto& r : memory.requests()) EXPECT_EQ(r.node, 1);
  sched_setaffinity(0, sizeof(saved), &saved);
}

// Replicate: a copy of the repacked weights on each node, each thread
// reading its own node's copy; same logits as without NUMA.
TEST(NumaEngine, ReplicateCopiesWeightsPerNodeAndChangesNothing) {
  ELLM_REQUIRE_MODEL(path);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  StaticTopology two = FakeTopology(2, 1);
  RecordingNodeMemory memory;
  EngineOptions o{.threads = 2, .numa = NumaMode::kReplicate};
  o.topology = &two;
  o.node_memory = &memory;
  auto e = Engine::Load(path, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  std::map<int, size_t> weight_bytes;
  for (const auto& r : memory.requests()) weight_bytes[r.node] += r.bytes;
  ASSERT_EQ(weight_bytes.size(), 2u);
  EXPECT_EQ(weight_bytes[0], weight_bytes[1]);
  EXPECT_GT(weight_bytes[0], 50u << 20) << "the repacked layer matrices, on each node";
  const auto ids = Text(**e, 300);
  const auto got = LastLogits(**e, ids);
  sched_setaffinity(0, sizeof(saved), &saved);
  auto plain = Engine::Load(path, {.threads = 2});
  ASSERT_TRUE(plain.ok());
  const auto want = LastLogits(**plain, ids);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace ellm

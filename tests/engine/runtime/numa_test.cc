// NUMA topology and placement: PlanNuma on fake 1/2/3/4-node machines (which
// node each (layer, KV head) slice goes to, which CPU each thread is pinned
// to), and the real topology and pinning on this machine.
#include "ellm/engine/numa.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "ellm/engine/thread_pool.h"

namespace ellm {
namespace {

// Llama 3.1 8B's attention shape, and Gemma 3 270M's.
constexpr int kLlamaLayers = 32, kLlamaKvHeads = 8;
constexpr int kGemmaLayers = 18, kGemmaKvHeads = 1;

NumaPlan Plan(const Topology& topo, NumaMode mode, int threads, int n_layer, int n_kv_head,
              int preferred_node = -1, std::span<const int64_t> layer_positions = {}) {
  StatusOr<NumaPlan> plan =
      PlanNuma(topo, mode, threads, n_layer, n_kv_head, preferred_node, layer_positions);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : NumaPlan{};
}

// Which topology node holds `cpu`; -1 if none.
int NodeOfCpu(const Topology& topo, int cpu) {
  for (const NumaNode& n : topo.nodes()) {
    if (std::count(n.cpus.begin(), n.cpus.end(), cpu) > 0) return n.id;
  }
  return -1;
}

// Slices per node over the whole cache.
std::map<int, int> SlicesPerNode(const NumaPlan& plan) {
  std::map<int, int> count;
  for (int il = 0; il < plan.n_layer; ++il) {
    for (int h = 0; h < plan.n_kv_head; ++h) ++count[plan.KvNode(il, h)];
  }
  return count;
}

// The property the layout exists for: every thread that computes attention
// for a slice runs on a CPU of the node that holds the slice.
void ExpectAttentionThreadsLocal(const Topology& topo, const NumaPlan& plan) {
  for (int il = 0; il < plan.n_layer; ++il) {
    for (int h = 0; h < plan.n_kv_head; ++h) {
      ThreadRange r = plan.KvHeadThreads(il, h);
      ASSERT_GT(r.size(), 0) << "layer " << il << " head " << h;
      for (int t = r.begin; t < r.end; ++t) {
        EXPECT_EQ(NodeOfCpu(topo, plan.cpus[t]), plan.KvNode(il, h))
            << "layer " << il << " head " << h << " thread " << t;
        EXPECT_EQ(plan.ThreadNode(t), plan.KvNode(il, h));
      }
    }
  }
}

TEST(NumaMode, ParsesEveryNameItPrints) {
  for (NumaMode mode :
       {NumaMode::kOff, NumaMode::kDistribute, NumaMode::kIsolate, NumaMode::kReplicate}) {
    StatusOr<NumaMode> parsed = ParseNumaMode(NumaModeName(mode));
    ASSERT_TRUE(parsed.ok()) << NumaModeName(mode);
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_STREQ(NumaModeName(NumaMode::kDistribute), "distribute");
}

TEST(NumaMode, RejectsUnknownTextNamingTheChoices) {
  for (const char* text : {"interleave", "Off", "", "distribute "}) {
    StatusOr<NumaMode> parsed = ParseNumaMode(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("off, distribute, isolate or replicate"),
              std::string::npos)
        << parsed.status().message();
  }
}

TEST(FakeTopology, HasContiguousCpusPerNodeAndTwoSocketDistances) {
  StaticTopology topo = FakeTopology(2, 4);
  ASSERT_EQ(topo.nodes().size(), 2u);
  EXPECT_EQ(topo.nodes()[1].id, 1);
  EXPECT_EQ(topo.nodes()[1].cpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(topo.CpuCount(), 8);
  EXPECT_EQ(topo.Distance(0, 0), 10);
  EXPECT_EQ(topo.Distance(0, 1), 21);
  EXPECT_EQ(topo.Distance(0, 5), 0);
  EXPECT_EQ(topo.ToString(), "2 nodes: 0 (CPUs 0-3, 64.0 GiB), 1 (CPUs 4-7, 64.0 GiB)");
}

TEST(PlanNuma, OneNodePutsEverythingOnItInEveryPinnedMode) {
  StaticTopology topo = FakeTopology(1, 4);
  for (NumaMode mode : {NumaMode::kDistribute, NumaMode::kIsolate, NumaMode::kReplicate}) {
    NumaPlan plan = Plan(topo, mode, 0, kLlamaLayers, kLlamaKvHeads);
    EXPECT_EQ(plan.threads, 4);
    EXPECT_EQ(plan.cpus, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(plan.nodes, (std::vector<int>{0}));
    EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{0, kLlamaLayers * kLlamaKvHeads}}));
    EXPECT_EQ(plan.KvHeadThreads(5, 3), (ThreadRange{0, 4}));
    EXPECT_EQ(plan.weight_nodes, (std::vector<int>{0}));
  }
}

TEST(PlanNuma, DistributeOnTwoNodesPutsHeadBlocksRotatingPerLayer) {
  StaticTopology topo = FakeTopology(2, 8);
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 8, 3, 4);
  // Threads 0-3 on node 0's first CPUs, 4-7 on node 1's.
  EXPECT_EQ(plan.cpus, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(plan.NodeThreads(0), (ThreadRange{0, 4}));
  EXPECT_EQ(plan.NodeThreads(1), (ThreadRange{4, 8}));
  EXPECT_EQ(plan.NodeThreads(2), (ThreadRange{0, 0}));
  const int expected[3][4] = {{0, 0, 1, 1}, {1, 1, 0, 0}, {0, 0, 1, 1}};
  for (int il = 0; il < 3; ++il) {
    for (int h = 0; h < 4; ++h) EXPECT_EQ(plan.KvNode(il, h), expected[il][h]) << il << "," << h;
  }
  EXPECT_EQ(plan.KvHeadThreads(1, 0), (ThreadRange{4, 8}));
  EXPECT_EQ(plan.weights, WeightPlacement::kInterleave);
  EXPECT_EQ(plan.weight_nodes, (std::vector<int>{0, 1}));
  ExpectAttentionThreadsLocal(topo, plan);
}

TEST(PlanNuma, DistributeLlamaOnFourNodesGivesEachNodeTwoHeadsPerLayer) {
  StaticTopology topo = FakeTopology(4, 32);
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 0, kLlamaLayers, kLlamaKvHeads);
  EXPECT_EQ(plan.threads, 128);
  for (int il = 0; il < kLlamaLayers; ++il) {
    std::map<int, int> per_node;
    for (int h = 0; h < kLlamaKvHeads; ++h) ++per_node[plan.KvNode(il, h)];
    EXPECT_EQ(per_node, (std::map<int, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}})) << "layer " << il;
  }
  ExpectAttentionThreadsLocal(topo, plan);
}

TEST(PlanNuma, DistributeGemmaSingleKvHeadSpreadsLayersOverNodes) {
  StaticTopology topo = FakeTopology(4, 2);
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 8, kGemmaLayers, kGemmaKvHeads);
  for (int il = 0; il < kGemmaLayers; ++il) EXPECT_EQ(plan.KvNode(il, 0), il % 4) << il;
  EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{0, 5}, {1, 5}, {2, 4}, {3, 4}}));
  ExpectAttentionThreadsLocal(topo, plan);
}

// Gemma 3 270M keeps 512 + micro-batch positions in its sliding-window
// layers and the whole context in layers 5, 11 and 17. Rotating by layer
// index would put all three on node 1 of 2 (5, 11, 17 are odd); rotating
// among equal layers spreads them.
TEST(PlanNuma, LayerSizesSpreadTheFullAttentionLayersOverNodes) {
  std::vector<int64_t> positions(kGemmaLayers, 512 + 256);
  for (int il : {5, 11, 17}) positions[il] = 32768;
  NumaPlan by_index = Plan(FakeTopology(2, 2), NumaMode::kDistribute, 4, kGemmaLayers, 1);
  EXPECT_EQ(by_index.KvNode(5, 0), 1);
  EXPECT_EQ(by_index.KvNode(11, 0), 1);
  EXPECT_EQ(by_index.KvNode(17, 0), 1);

  NumaPlan two = Plan(FakeTopology(2, 2), NumaMode::kDistribute, 4, kGemmaLayers, 1, -1, positions);
  EXPECT_EQ(two.KvNode(5, 0), 0);
  EXPECT_EQ(two.KvNode(11, 0), 1);
  EXPECT_EQ(two.KvNode(17, 0), 0);
  EXPECT_EQ(SlicesPerNode(two), (std::map<int, int>{{0, 10}, {1, 8}}));

  NumaPlan four =
      Plan(FakeTopology(4, 2), NumaMode::kDistribute, 8, kGemmaLayers, 1, -1, positions);
  std::set<int> global_nodes = {four.KvNode(5, 0), four.KvNode(11, 0), four.KvNode(17, 0)};
  EXPECT_EQ(global_nodes, (std::set<int>{0, 1, 2}));
  ExpectAttentionThreadsLocal(FakeTopology(4, 2), four);

  std::vector<int64_t> short_list(3, 512);
  EXPECT_EQ(PlanNuma(FakeTopology(2, 2), NumaMode::kDistribute, 4, kGemmaLayers, 1, -1, short_list)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(PlanNuma, DistributeUnevenHeadsBalancesSlicesOverLayers) {
  // 8 KV heads on 3 nodes: 3/3/2 heads per layer, equal totals over 24 layers.
  StaticTopology topo = FakeTopology(3, 4);
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 12, 24, kLlamaKvHeads);
  for (int il = 0; il < 24; ++il) {
    std::multiset<int> sizes;
    std::map<int, int> per_node;
    for (int h = 0; h < kLlamaKvHeads; ++h) ++per_node[plan.KvNode(il, h)];
    for (auto [node, n] : per_node) sizes.insert(n);
    EXPECT_EQ(sizes, (std::multiset<int>{2, 3, 3})) << "layer " << il;
  }
  EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{0, 64}, {1, 64}, {2, 64}}));
  ExpectAttentionThreadsLocal(topo, plan);
}

TEST(PlanNuma, FewerThreadsThanNodesUsesOnlyNodesThatRunThreads) {
  StaticTopology topo = FakeTopology(4, 8);
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 2, kLlamaLayers, kLlamaKvHeads);
  EXPECT_EQ(plan.cpus, (std::vector<int>{0, 8}));
  EXPECT_EQ(plan.nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{0, 128}, {1, 128}}));
  EXPECT_EQ(plan.weight_nodes, (std::vector<int>{0, 1}));
  ExpectAttentionThreadsLocal(topo, plan);
}

TEST(PlanNuma, SpreadsThreadsRoundRobinAndRespectsSmallNodes) {
  NumaPlan plan = Plan(FakeTopology(4, 8), NumaMode::kDistribute, 6, 2, 8);
  EXPECT_EQ(plan.cpus, (std::vector<int>{0, 1, 8, 9, 16, 24}));
  EXPECT_EQ(plan.node_thread_begin, (std::vector<int>{0, 2, 4, 5, 6}));
  EXPECT_EQ(plan.ThreadNode(4), 2);

  // A node with one usable CPU (a cpuset) takes one thread; the rest go on.
  StaticTopology uneven({NumaNode{.id = 0, .cpus = {3}}, NumaNode{.id = 1, .cpus = {4, 5, 6, 7}}});
  NumaPlan five = Plan(uneven, NumaMode::kDistribute, 5, 2, 8);
  EXPECT_EQ(five.cpus, (std::vector<int>{3, 4, 5, 6, 7}));
  EXPECT_EQ(five.NodeThreads(1), (ThreadRange{1, 5}));
  EXPECT_FALSE(PlanNuma(uneven, NumaMode::kDistribute, 6, 2, 8).ok());
}

TEST(PlanNuma, SparseNodeIdsAreKeptAsTheOsNumbersThem) {
  StaticTopology topo({NumaNode{.id = 0, .cpus = {0, 1}}, NumaNode{.id = 2, .cpus = {2, 3}}});
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 4, 4, 2);
  EXPECT_EQ(plan.nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{0, 4}, {2, 4}}));
  EXPECT_EQ(plan.NodeThreads(2), (ThreadRange{2, 4}));
}

TEST(PlanNuma, IsolatePutsThreadsKvAndWeightsOnTheChosenNode) {
  StaticTopology topo = FakeTopology(4, 4);
  NumaPlan plan = Plan(topo, NumaMode::kIsolate, 0, kLlamaLayers, kLlamaKvHeads, 2);
  EXPECT_EQ(plan.threads, 4);
  EXPECT_EQ(plan.cpus, (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{2, kLlamaLayers * kLlamaKvHeads}}));
  EXPECT_EQ(plan.weights, WeightPlacement::kLocal);
  EXPECT_EQ(plan.weight_nodes, (std::vector<int>{2}));
  ExpectAttentionThreadsLocal(topo, plan);

  NumaPlan first = Plan(topo, NumaMode::kIsolate, 2, kLlamaLayers, kLlamaKvHeads);
  EXPECT_EQ(first.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(first.KvNode(31, 7), 0);
}

TEST(PlanNuma, IsolateRefusesMoreThreadsThanTheNodeHasCpus) {
  StatusOr<NumaPlan> plan = PlanNuma(FakeTopology(2, 4), NumaMode::kIsolate, 6, 2, 2, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("6 threads but only 4 CPUs on node 1"), std::string::npos)
      << plan.status().message();
}

TEST(PlanNuma, ReplicateLaysOutKvAsDistributeWithWeightsOnEveryNode) {
  StaticTopology topo = FakeTopology(2, 4);
  NumaPlan replicate = Plan(topo, NumaMode::kReplicate, 8, kLlamaLayers, kLlamaKvHeads);
  NumaPlan distribute = Plan(topo, NumaMode::kDistribute, 8, kLlamaLayers, kLlamaKvHeads);
  EXPECT_EQ(replicate.kv_node, distribute.kv_node);
  EXPECT_EQ(replicate.cpus, distribute.cpus);
  EXPECT_EQ(replicate.weights, WeightPlacement::kReplicate);
  EXPECT_EQ(replicate.weight_nodes, (std::vector<int>{0, 1}));
}

TEST(PlanNuma, OffPinsNothingAndBindsNothing) {
  NumaPlan plan = Plan(FakeTopology(2, 4), NumaMode::kOff, 0, 4, 2);
  EXPECT_EQ(plan.threads, 8);
  EXPECT_TRUE(plan.cpus.empty());
  EXPECT_EQ(SlicesPerNode(plan), (std::map<int, int>{{-1, 8}}));
  EXPECT_EQ(plan.KvHeadThreads(3, 1), (ThreadRange{0, 8}));
  EXPECT_EQ(plan.ThreadNode(5), -1);
  EXPECT_EQ(plan.weights, WeightPlacement::kDefault);
  // Unpinned threads may outnumber CPUs.
  EXPECT_EQ(Plan(FakeTopology(1, 2), NumaMode::kOff, 16, 4, 2).threads, 16);
}

TEST(PlanNuma, RejectsBadModelShapeAndUnknownNode) {
  StaticTopology topo = FakeTopology(2, 4);
  EXPECT_EQ(PlanNuma(topo, NumaMode::kDistribute, 0, 4, 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanNuma(topo, NumaMode::kDistribute, -1, 4, 2).status().code(),
            StatusCode::kInvalidArgument);
  StatusOr<NumaPlan> plan = PlanNuma(topo, NumaMode::kIsolate, 0, 4, 2, 7);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("node 7"), std::string::npos);
  EXPECT_NE(plan.status().message().find("nodes: 0,1"), std::string::npos);
}

TEST(NumaPlan, ToStringNamesNodesThreadsCpusAndWeights) {
  NumaPlan plan = Plan(FakeTopology(2, 4), NumaMode::kDistribute, 4, 2, 8);
  EXPECT_EQ(plan.ToString(),
            "numa distribute: 4 threads, node 0: threads 0-1 on CPUs 0,1; node 1: threads 2-3 on "
            "CPUs 4,5; KV: the 8 heads of each layer in blocks over the 2 nodes, rotated per "
            "layer; weights interleave on nodes 0,1");
  EXPECT_EQ(Plan(FakeTopology(1, 2), NumaMode::kReplicate, 2, 2, 8).ToString(),
            "numa replicate: 2 threads, node 0: threads 0-1 on CPUs 0,1; KV on node 0; weights "
            "replicate on nodes 0");
}

std::set<int> AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::set<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

TEST(SystemTopology, CoversExactlyTheCpusOfOurAffinity) {
  StaticTopology topo = SystemTopology();
  ASSERT_GE(topo.nodes().size(), 1u) << topo.ToString();
  std::set<int> listed;
  for (const NumaNode& n : topo.nodes()) {
    EXPECT_FALSE(n.cpus.empty()) << "node " << n.id;
    EXPECT_GT(n.memory_bytes, 0u) << "node " << n.id;
    EXPECT_EQ(topo.Distance(n.id, n.id), 10) << "node " << n.id;
    for (int c : n.cpus) EXPECT_TRUE(listed.insert(c).second) << "CPU " << c << " listed twice";
  }
  EXPECT_EQ(listed, AffinityCpus()) << topo.ToString();
}

// Plans for this machine and checks that the pool's workers, and a thread
// pinned with PinCallingThread, run where the plan says.
TEST(SystemTopology, PlannedPinningHoldsInTheThreadPool) {
  StaticTopology topo = SystemTopology();
  NumaPlan plan = Plan(topo, NumaMode::kDistribute, 0, 2, 1);
  ASSERT_EQ(plan.threads, topo.CpuCount());
  ASSERT_EQ(plan.cpus.size(), static_cast<size_t>(plan.threads));
  ThreadPool pool({.threads = plan.threads, .cpus = plan.cpus});
  ASSERT_TRUE(pool.pinning_status().ok()) << pool.pinning_status().ToString();
  std::vector<int> ran_on(plan.threads, -1);
  pool.Run([&](int t, int) { ran_on[t] = sched_getcpu(); });
  for (int t = 1; t < plan.threads; ++t) EXPECT_EQ(ran_on[t], plan.cpus[t]) << "thread " << t;

  int caller_cpu = -1;
  std::thread caller([&] {
    ASSERT_TRUE(PinCallingThread(plan.cpus[0]).ok());
    caller_cpu = sched_getcpu();
  });
  caller.join();
  EXPECT_EQ(caller_cpu, plan.cpus[0]);
  EXPECT_FALSE(PinCallingThread(-3).ok());
}

}  // namespace
}  // namespace ellm

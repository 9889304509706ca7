// NUMA placement: which nodes and CPUs this process may use (Topology), the
// user's choice of layout (NumaMode), and the plan computed from both
// (PlanNuma): the CPU each engine thread is pinned to, the node each KV slice
// (layer, KV head) is allocated on, and how weights are placed. Memory itself
// is allocated by NodeMemory (numa_memory.h). docs/numa.md explains the
// layouts and the traffic they cause.
//
// Node numbers everywhere in this API are the OS's (libnuma's) node ids,
// which need not be dense; -1 means "no binding". Everything here works on a
// one-node machine, where every mode places everything on that node.
//
//   StaticTopology topo = SystemTopology();
//   ELLM_ASSIGN_OR_RETURN(NumaPlan plan, PlanNuma(topo, NumaMode::kDistribute,
//                                                 threads, n_layer, n_kv_head));
//   ThreadPool pool({.threads = plan.threads, .cpus = plan.cpus});
//   int node = plan.KvNode(il, h);  // allocate that slice there
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"

namespace ellm {

struct NumaNode {
  int id = 0;                 // OS node id
  std::vector<int> cpus;      // CPUs we may run on, in the order threads take them
  uint64_t memory_bytes = 0;  // total memory of the node; 0 = unknown or none
};

// The machine as the placement sees it. An interface so that tests can plan
// for machines they do not run on.
class Topology {
 public:
  virtual ~Topology() = default;
  // The nodes this process may run threads on, ascending id; never empty.
  virtual const std::vector<NumaNode>& nodes() const = 0;
  // ACPI SLIT distance between two nodes (10 = local, ~20-32 one hop away);
  // 0 when unknown or either id is not in nodes().
  virtual int Distance(int from_node, int to_node) const = 0;

  // nullptr if `id` is not in nodes().
  const NumaNode* FindNode(int id) const;
  int CpuCount() const;
  // "2 nodes: 0 (CPUs 0-15, 64.0 GiB), 1 (CPUs 16-31, 64.0 GiB)".
  std::string ToString() const;
};

// A topology given as data: what SystemTopology() read, or a fake.
class StaticTopology : public Topology {
 public:
  // distance: row-major [nodes.size()]^2 in nodes' order; empty = unknown.
  // REQUIRES: nodes non-empty, ascending id, each with at least one CPU.
  explicit StaticTopology(std::vector<NumaNode> nodes, std::vector<int> distance = {});
  const std::vector<NumaNode>& nodes() const override { return nodes_; }
  int Distance(int from_node, int to_node) const override;

 private:
  int IndexOf(int id) const;
  std::vector<NumaNode> nodes_;
  std::vector<int> distance_;
};

// This machine, read from libnuma and sched_getaffinity(2): the nodes that
// hold at least one CPU of our affinity mask, each listing only those CPUs,
// one hardware thread per physical core first (SMT siblings last). CPUs of a
// node without memory join the nearest node with memory. Without libnuma
// support, or when only one node is left, one node (the OS's id, else 0)
// with every CPU of the affinity mask. Never fails.
StaticTopology SystemTopology();

// n_nodes nodes with ids 0..n_nodes-1; node k holds CPUs
// [k * cpus_per_node, (k + 1) * cpus_per_node) and memory_per_node bytes;
// distance 10 local, 21 remote (a two-socket machine's SLIT).
StaticTopology FakeTopology(int n_nodes, int cpus_per_node,
                            uint64_t memory_per_node = uint64_t{64} << 30);

// How the engine lays itself out over nodes. Config text is NumaModeName();
// append-only.
enum class NumaMode {
  kOff = 0,     // no pinning, no binding: the kernel decides (first touch)
  kDistribute,  // threads on every node, KV sliced across nodes, weights interleaved
  kIsolate,     // threads, KV and weights on one node
  kReplicate,   // as kDistribute, but each node reads its own copy of the weights
};

const char* NumaModeName(NumaMode mode);  // "off", "distribute", "isolate", "replicate"
// Parses NumaModeName()'s text; anything else is InvalidArgument naming the
// accepted values.
StatusOr<NumaMode> ParseNumaMode(std::string_view text);

enum class WeightPlacement {
  kDefault,     // leave as loaded (kOff)
  kInterleave,  // pages round-robin over weight_nodes (kDistribute)
  kLocal,       // all pages on weight_nodes[0] (kIsolate)
  kReplicate,   // one full copy on each of weight_nodes (kReplicate)
};
const char* WeightPlacementName(WeightPlacement placement);

// Thread indices [begin, end) of the engine's pool (0 is the calling thread).
struct ThreadRange {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
  bool Contains(int thread) const { return thread >= begin && thread < end; }
  bool operator==(const ThreadRange&) const = default;
};

// The layout PlanNuma chose. Plain data; the helpers only read it.
struct NumaPlan {
  NumaMode mode = NumaMode::kOff;
  int threads = 1;
  int n_layer = 0, n_kv_head = 0;
  // cpus[t]: the CPU thread t is pinned to, for ThreadPool::Options::cpus.
  // Empty for kOff. ThreadPool leaves thread 0 (the caller) alone: whoever
  // owns that thread may pin it to cpus[0] (PinCallingThread).
  std::vector<int> cpus;
  // The nodes that run threads, in thread order; node nodes[k] runs threads
  // [node_thread_begin[k], node_thread_begin[k + 1]). Empty for kOff.
  std::vector<int> nodes;
  std::vector<int> node_thread_begin;
  // kv_node[layer * n_kv_head + kv_head]: the node that slice is allocated on
  // (-1 for kOff). kDistribute and kReplicate use, with A = nodes.size() and
  // H = n_kv_head:
  //   KvNode(layer, h) = nodes[(h * A / H + r(layer)) % A]
  // contiguous blocks of heads per node, the blocks rotated by one node per
  // layer: r(layer) = layer, or, when PlanNuma is given layer_positions, the
  // number of earlier layers holding as many positions (so that the few
  // full-attention layers among sliding-window ones spread over the nodes
  // too). Each node holds H/A heads of every layer when A divides H; over
  // the layers the slices even out when it does not or when H < A (Gemma 3
  // 270M's single KV head lands on one node per layer).
  std::vector<int> kv_node;
  WeightPlacement weights = WeightPlacement::kDefault;
  std::vector<int> weight_nodes;  // see WeightPlacement; empty for kDefault

  // REQUIRES: 0 <= layer < n_layer, 0 <= kv_head < n_kv_head.
  int KvNode(int layer, int kv_head) const;
  // The node thread t runs on; -1 for kOff. REQUIRES: 0 <= t < threads.
  int ThreadNode(int thread) const;
  // The threads on `node`; empty if it runs none.
  ThreadRange NodeThreads(int node) const;
  // The threads that compute attention for this slice: those on its node,
  // so that they read only local KV; every thread for kOff.
  ThreadRange KvHeadThreads(int layer, int kv_head) const;
  // One line for the log: mode, nodes with their threads and CPUs, KV rule,
  // weights.
  std::string ToString() const;
};

// threads: the pool's size including the caller; 0 = every CPU of the nodes
// used. preferred_node: the node kIsolate uses (-1 = the first node); other
// modes only check that it exists. n_layer, n_kv_head: from the model.
// layer_positions: optional, [n_layer] positions each layer's KV holds
// (sliding-window layers hold fewer); only which layers are equal matters.
// Errors (InvalidArgument): more threads than the used nodes' CPUs in a
// pinned mode, a preferred node not in the topology, n_layer or n_kv_head < 1,
// layer_positions of another length.
StatusOr<NumaPlan> PlanNuma(const Topology& topology, NumaMode mode, int threads, int n_layer,
                            int n_kv_head, int preferred_node = -1,
                            std::span<const int64_t> layer_positions = {});

// Pins the calling thread to `cpu`; the error names the CPU and the reason.
Status PinCallingThread(int cpu);

}  // namespace ellm

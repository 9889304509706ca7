// PlanNuma: from a topology and a mode to pinned CPUs, KV slice nodes and a
// weight placement. The rules are stated in numa.h beside the fields they
// fill; docs/numa.md gives their cost.
#include "ellm/engine/numa.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace ellm {
namespace {

std::string JoinInts(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string NodeIds(const Topology& topology) {
  std::vector<int> ids;
  for (const NumaNode& n : topology.nodes()) ids.push_back(n.id);
  return JoinInts(ids);
}

// Hands out threads one at a time, round-robin over `nodes`, skipping nodes
// whose CPUs are all taken: 6 threads on 4 nodes -> 2,2,1,1.
// REQUIRES: 0 < threads <= total CPUs of `nodes`.
std::vector<int> SpreadThreads(const std::vector<const NumaNode*>& nodes, int threads) {
  std::vector<int> count(nodes.size(), 0);
  for (int given = 0; given < threads;) {
    for (size_t k = 0; k < nodes.size() && given < threads; ++k) {
      if (count[k] < static_cast<int>(nodes[k]->cpus.size())) {
        ++count[k];
        ++given;
      }
    }
  }
  return count;
}

}  // namespace

const char* NumaModeName(NumaMode mode) {
  switch (mode) {
    case NumaMode::kOff:
      return "off";
    case NumaMode::kDistribute:
      return "distribute";
    case NumaMode::kIsolate:
      return "isolate";
    case NumaMode::kReplicate:
      return "replicate";
  }
  return "unknown";
}

StatusOr<NumaMode> ParseNumaMode(std::string_view text) {
  for (NumaMode mode :
       {NumaMode::kOff, NumaMode::kDistribute, NumaMode::kIsolate, NumaMode::kReplicate}) {
    if (text == NumaModeName(mode)) return mode;
  }
  return InvalidArgumentError("numa: '" + std::string(text) +
                              "' is not a NUMA mode; expected off, distribute, isolate or "
                              "replicate");
}

const char* WeightPlacementName(WeightPlacement placement) {
  switch (placement) {
    case WeightPlacement::kDefault:
      return "default";
    case WeightPlacement::kInterleave:
      return "interleave";
    case WeightPlacement::kLocal:
      return "local";
    case WeightPlacement::kReplicate:
      return "replicate";
  }
  return "unknown";
}

int NumaPlan::KvNode(int layer, int kv_head) const { return kv_node[layer * n_kv_head + kv_head]; }

int NumaPlan::ThreadNode(int thread) const {
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (thread < node_thread_begin[k + 1]) return nodes[k];
  }
  return -1;
}

ThreadRange NumaPlan::NodeThreads(int node) const {
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k] == node) return {node_thread_begin[k], node_thread_begin[k + 1]};
  }
  return {};
}

ThreadRange NumaPlan::KvHeadThreads(int layer, int kv_head) const {
  int node = KvNode(layer, kv_head);
  return node < 0 ? ThreadRange{0, threads} : NodeThreads(node);
}

std::string NumaPlan::ToString() const {
  std::string s =
      std::string("numa ") + NumaModeName(mode) + ": " + std::to_string(threads) + " threads";
  if (nodes.empty()) return s + ", unpinned; KV and weights where the kernel puts them";
  for (size_t k = 0; k < nodes.size(); ++k) {
    int b = node_thread_begin[k], e = node_thread_begin[k + 1];
    std::vector<int> node_cpus(cpus.begin() + b, cpus.begin() + e);
    s += (k ? "; " : ", ") + std::string("node ") + std::to_string(nodes[k]) + ": threads " +
         std::to_string(b) + "-" + std::to_string(e - 1) + " on CPUs " + JoinInts(node_cpus);
  }
  if (nodes.size() == 1) {
    s += "; KV on node " + std::to_string(nodes[0]);
  } else {
    s += "; KV: the " + std::to_string(n_kv_head) + " heads of each layer in blocks over the " +
         std::to_string(nodes.size()) + " nodes, rotated per layer";
  }
  return s + "; weights " + WeightPlacementName(weights) + " on nodes " + JoinInts(weight_nodes);
}

StatusOr<NumaPlan> PlanNuma(const Topology& topology, NumaMode mode, int threads, int n_layer,
                            int n_kv_head, int preferred_node,
                            std::span<const int64_t> layer_positions) {
  if (n_layer < 1 || n_kv_head < 1) {
    return InvalidArgumentError("numa plan: the model has " + std::to_string(n_layer) +
                                " layers and " + std::to_string(n_kv_head) +
                                " KV heads; expected at least 1 of each");
  }
  if (!layer_positions.empty() && layer_positions.size() != static_cast<size_t>(n_layer)) {
    return InvalidArgumentError("numa plan: " + std::to_string(layer_positions.size()) +
                                " layer sizes for a model of " + std::to_string(n_layer) +
                                " layers");
  }
  if (threads < 0) {
    return InvalidArgumentError("numa plan: threads is " + std::to_string(threads) +
                                "; expected 0 (every CPU) or more");
  }
  if (topology.nodes().empty()) return InternalError("numa plan: the topology has no nodes");
  if (preferred_node >= 0 && topology.FindNode(preferred_node) == nullptr) {
    return InvalidArgumentError("numa plan: node " + std::to_string(preferred_node) +
                                " is not one this process may run on; nodes: " + NodeIds(topology));
  }
  NumaPlan plan;
  plan.mode = mode;
  plan.n_layer = n_layer;
  plan.n_kv_head = n_kv_head;
  plan.kv_node.assign(static_cast<size_t>(n_layer) * n_kv_head, -1);
  if (mode == NumaMode::kOff) {
    plan.threads = threads > 0 ? threads : topology.CpuCount();
    return plan;
  }

  std::vector<const NumaNode*> used;
  if (mode == NumaMode::kIsolate) {
    used.push_back(preferred_node >= 0 ? topology.FindNode(preferred_node)
                                       : &topology.nodes().front());
  } else {
    for (const NumaNode& n : topology.nodes()) used.push_back(&n);
  }
  int capacity = 0;
  for (const NumaNode* n : used) capacity += static_cast<int>(n->cpus.size());
  plan.threads = threads > 0 ? threads : capacity;
  if (plan.threads > capacity) {
    // Two pinned threads on one CPU take turns at every barrier of every
    // matmul; refusing is kinder than running at half speed.
    return InvalidArgumentError(
        "numa " + std::string(NumaModeName(mode)) + ": " + std::to_string(plan.threads) +
        " threads but only " + std::to_string(capacity) + " CPUs on " +
        (mode == NumaMode::kIsolate ? "node " + std::to_string(used[0]->id) : "the nodes") +
        " this process may use (" + topology.ToString() + "); lower threads" +
        (mode == NumaMode::kIsolate ? " or use numa: distribute" : "") + ", or set threads: 0");
  }

  std::vector<int> count = SpreadThreads(used, plan.threads);
  plan.node_thread_begin.push_back(0);
  for (size_t k = 0; k < used.size(); ++k) {
    if (count[k] == 0) continue;
    plan.nodes.push_back(used[k]->id);
    plan.cpus.insert(plan.cpus.end(), used[k]->cpus.begin(), used[k]->cpus.begin() + count[k]);
    plan.node_thread_begin.push_back(plan.node_thread_begin.back() + count[k]);
  }

  const int a = static_cast<int>(plan.nodes.size());
  for (int il = 0; il < n_layer; ++il) {
    int rotation = il;
    if (!layer_positions.empty()) {
      rotation = static_cast<int>(
          std::count(layer_positions.begin(), layer_positions.begin() + il, layer_positions[il]));
    }
    for (int h = 0; h < n_kv_head; ++h) {
      plan.kv_node[il * n_kv_head + h] = plan.nodes[(h * a / n_kv_head + rotation) % a];
    }
  }
  plan.weight_nodes = plan.nodes;
  switch (mode) {
    case NumaMode::kDistribute:
      plan.weights = WeightPlacement::kInterleave;
      break;
    case NumaMode::kIsolate:
      plan.weights = WeightPlacement::kLocal;
      break;
    case NumaMode::kReplicate:
      plan.weights = WeightPlacement::kReplicate;
      break;
    case NumaMode::kOff:
      break;
  }
  return plan;
}

Status PinCallingThread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return InvalidArgumentError("cannot pin to CPU " + std::to_string(cpu) +
                                ": not a valid CPU number");
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) {
    return InvalidArgumentError("cannot pin to CPU " + std::to_string(cpu) + ": " +
                                std::strerror(rc));
  }
  return OkStatus();
}

}  // namespace ellm

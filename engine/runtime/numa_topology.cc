// Topology: StaticTopology, the fake for tests, and SystemTopology() read
// from libnuma, sched_getaffinity(2) and sysfs (for SMT siblings).
#include "ellm/engine/numa.h"

#include <numa.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace ellm {
namespace {

// "0-3,8,10-11" (sysfs cpu lists) -> {0,1,2,3,8,10,11}; empty on a parse error.
std::vector<int> ParseCpuList(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size() && text[i] != '\n') {
    int a = 0, b = 0, used = 0;
    // %n stores how far it got without counting as a field: past "a" for a
    // single CPU, past "a-b" for a range.
    int fields = std::sscanf(text.c_str() + i, "%d%n-%d%n", &a, &used, &b, &used);
    if (fields < 1 || used <= 0) return {};
    if (fields == 1) b = a;
    for (int c = a; c <= b; ++c) out.push_back(c);
    i += used;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return out;
}

// 0 for the first hardware thread of its physical core, 1 for the second...
// 0 when sysfs does not say.
int SiblingRank(int cpu) {
  std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                   "/topology/thread_siblings_list");
  std::string line;
  if (!in || !std::getline(in, line)) return 0;
  std::vector<int> siblings = ParseCpuList(line);
  std::sort(siblings.begin(), siblings.end());
  auto it = std::find(siblings.begin(), siblings.end(), cpu);
  return it == siblings.end() ? 0 : static_cast<int>(it - siblings.begin());
}

// One thread per physical core before any core gets its second: two threads
// on one core share its load ports, so they come last.
void OrderCoresFirst(std::vector<int>& cpus) {
  std::vector<std::pair<int, int>> keyed;
  for (int cpu : cpus) keyed.emplace_back(SiblingRank(cpu), cpu);
  std::sort(keyed.begin(), keyed.end());
  for (size_t i = 0; i < cpus.size(); ++i) cpus[i] = keyed[i].second;
}

std::vector<int> AffinityCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < std::max(1L, n); ++c) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

StaticTopology OneNode(int id, std::vector<int> cpus, uint64_t memory) {
  OrderCoresFirst(cpus);
  return StaticTopology({NumaNode{.id = id, .cpus = std::move(cpus), .memory_bytes = memory}},
                        {10});
}

uint64_t PhysicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace

const NumaNode* Topology::FindNode(int id) const {
  for (const NumaNode& n : nodes()) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

int Topology::CpuCount() const {
  int n = 0;
  for (const NumaNode& node : nodes()) n += static_cast<int>(node.cpus.size());
  return n;
}

std::string Topology::ToString() const {
  auto cpu_list = [](std::vector<int> cpus) {
    std::sort(cpus.begin(), cpus.end());
    std::string s;
    for (size_t i = 0; i < cpus.size();) {
      size_t j = i;
      while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
      if (!s.empty()) s += ',';
      s += std::to_string(cpus[i]);
      if (j > i) s += '-' + std::to_string(cpus[j]);
      i = j + 1;
    }
    return s;
  };
  std::string s = std::to_string(nodes().size()) + (nodes().size() == 1 ? " node: " : " nodes: ");
  for (size_t i = 0; i < nodes().size(); ++i) {
    const NumaNode& n = nodes()[i];
    char mem[32];
    std::snprintf(mem, sizeof(mem), "%.1f GiB", static_cast<double>(n.memory_bytes) / (1 << 30));
    s += (i ? ", " : "") + std::to_string(n.id) + " (CPUs " + cpu_list(n.cpus) + ", " + mem + ")";
  }
  return s;
}

StaticTopology::StaticTopology(std::vector<NumaNode> nodes, std::vector<int> distance)
    : nodes_(std::move(nodes)), distance_(std::move(distance)) {
  if (distance_.size() != nodes_.size() * nodes_.size()) distance_.clear();
}

int StaticTopology::IndexOf(int id) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

int StaticTopology::Distance(int from_node, int to_node) const {
  int a = IndexOf(from_node), b = IndexOf(to_node);
  if (a < 0 || b < 0 || distance_.empty()) return 0;
  return distance_[a * nodes_.size() + b];
}

StaticTopology FakeTopology(int n_nodes, int cpus_per_node, uint64_t memory_per_node) {
  std::vector<NumaNode> nodes;
  std::vector<int> distance;
  for (int k = 0; k < n_nodes; ++k) {
    NumaNode node{.id = k, .memory_bytes = memory_per_node};
    for (int c = 0; c < cpus_per_node; ++c) node.cpus.push_back(k * cpus_per_node + c);
    nodes.push_back(std::move(node));
    for (int j = 0; j < n_nodes; ++j) distance.push_back(j == k ? 10 : 21);
  }
  return StaticTopology(std::move(nodes), std::move(distance));
}

StaticTopology SystemTopology() {
  std::vector<int> affinity = AffinityCpus();
  if (numa_available() < 0) return OneNode(0, affinity, PhysicalMemory());

  // Which node each CPU of our affinity mask sits on (numa_node_of_cpu), and
  // which nodes we may allocate on (cpuset.mems) and that have memory.
  std::map<int, std::vector<int>> cpus_of;
  for (int cpu : affinity) {
    int node = numa_node_of_cpu(cpu);
    cpus_of[node < 0 ? 0 : node].push_back(cpu);
  }
  bitmask* mems = numa_get_mems_allowed();
  std::map<int, uint64_t> memory;
  for (int node = 0; node <= numa_max_node(); ++node) {
    long long free_bytes = 0;
    long long size = numa_node_size64(node, &free_bytes);
    if (size > 0 && numa_bitmask_isbitset(mems, node)) memory[node] = static_cast<uint64_t>(size);
  }
  numa_bitmask_free(mems);
  if (memory.empty()) return OneNode(0, affinity, PhysicalMemory());

  // A node whose memory we cannot use lends its CPUs to the nearest one we can.
  std::map<int, std::vector<int>> placed;
  for (auto& [node, cpus] : cpus_of) {
    int home = node;
    if (memory.count(node) == 0) {
      int best = -1;
      for (const auto& [candidate, bytes] : memory) {
        if (best < 0 || numa_distance(node, candidate) < numa_distance(node, best)) {
          best = candidate;
        }
      }
      home = best;
    }
    placed[home].insert(placed[home].end(), cpus.begin(), cpus.end());
  }
  if (placed.size() == 1) {
    int id = placed.begin()->first;
    return OneNode(id, affinity, memory[id]);
  }

  std::vector<NumaNode> nodes;
  for (auto& [id, cpus] : placed) {
    std::sort(cpus.begin(), cpus.end());
    OrderCoresFirst(cpus);
    nodes.push_back(NumaNode{.id = id, .cpus = std::move(cpus), .memory_bytes = memory[id]});
  }
  std::vector<int> distance;
  for (const NumaNode& a : nodes) {
    for (const NumaNode& b : nodes) distance.push_back(numa_distance(a.id, b.id));
  }
  return StaticTopology(std::move(nodes), std::move(distance));
}

}  // namespace ellm

// NodeMemory over mmap(2) + mbind(2) (through libnuma's wrappers and node
// masks), its recording fake, and mlock(2) with an error a user can act on.
#include "ellm/engine/numa_memory.h"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace ellm {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
size_t RoundUpToPages(size_t bytes) { return (bytes + PageSize() - 1) / PageSize() * PageSize(); }

// "512 B", "64.0 KiB", "4.9 GiB".
std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::string FormatLimit(rlim_t limit) {
  return limit == RLIM_INFINITY ? "unlimited" : FormatBytes(static_cast<uint64_t>(limit));
}

// VmLck of /proc/self/status: what this process has locked already.
uint64_t LockedBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "VmLck: %llu kB", &kib) == 1) return kib * 1024;
  }
  return 0;
}

bool OneNodeMachine() { return numa_available() < 0 || numa_num_configured_nodes() <= 1; }

// Applies `policy` over `nodes` to [addr, addr + bytes) (page-aligned).
// `what` prefixes errors.
Status Bind(void* addr, size_t bytes, int policy, const std::vector<int>& nodes,
            const std::string& what, unsigned flags = 0) {
  if (numa_available() < 0) {
    for (int node : nodes) {
      if (node != 0) {
        return InvalidArgumentError(what + ": NUMA node " + std::to_string(node) +
                                    " does not exist (this kernel reports no NUMA support)");
      }
    }
    return OkStatus();
  }
  bitmask* allowed = numa_get_mems_allowed();
  bitmask* mask = numa_allocate_nodemask();
  std::string bad;
  for (int node : nodes) {
    if (node < 0 || node > numa_max_node() || !numa_bitmask_isbitset(allowed, node)) {
      bad = std::to_string(node);
      break;
    }
    numa_bitmask_setbit(mask, node);
  }
  if (nodes.empty()) copy_bitmask_to_bitmask(allowed, mask);
  numa_bitmask_free(allowed);
  long rc = 0;
  int err = 0;
  if (bad.empty()) {
    // libnuma passes size + 1: the kernel reads maxnode - 1 bits.
    rc = mbind(addr, bytes, policy, mask->maskp, mask->size + 1, flags);
    err = errno;
  }
  numa_bitmask_free(mask);
  if (!bad.empty()) {
    return InvalidArgumentError(what + ": NUMA node " + bad +
                                " does not exist or this process may not allocate on it");
  }
  if (rc == 0) return OkStatus();
  // Binding to the only node changes nothing, so a kernel or seccomp filter
  // that refuses mbind costs nothing there.
  if ((err == ENOSYS || err == EPERM) && OneNodeMachine()) return OkStatus();
  return ErrnoError(err, what + ": mbind");
}

StatusOr<void*> MapAndBind(size_t bytes, int policy, const std::vector<int>& nodes,
                           const std::string& what) {
  if (bytes == 0) return InvalidArgumentError(what + ": zero bytes requested");
  size_t size = RoundUpToPages(bytes);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ErrnoError(errno, what + ": mmap");
  if (policy != MPOL_DEFAULT) {
    Status s = Bind(p, size, policy, nodes, what);
    if (!s.ok()) {
      munmap(p, size);
      return s;
    }
  }
  return p;
}

class LibnumaMemory : public NodeMemory {
 public:
  StatusOr<void*> Allocate(size_t bytes, int node) override {
    std::string what = "allocating " + FormatBytes(bytes) +
                       (node < 0 ? "" : " on NUMA node " + std::to_string(node));
    if (node < 0) return MapAndBind(bytes, MPOL_DEFAULT, {}, what);
    return MapAndBind(bytes, MPOL_BIND, {node}, what);
  }
  StatusOr<void*> AllocateInterleaved(size_t bytes, const std::vector<int>& nodes) override {
    return MapAndBind(bytes, MPOL_INTERLEAVE, nodes,
                      "allocating " + FormatBytes(bytes) + " interleaved over NUMA nodes");
  }
  void Free(void* p, size_t bytes) override {
    if (p != nullptr) munmap(p, RoundUpToPages(bytes));
  }
};

}  // namespace

NodeMemory& SystemNodeMemory() {
  static LibnumaMemory* const memory =
      new LibnumaMemory();  // never destroyed: no exit-order issues
  return *memory;
}

RecordingNodeMemory::~RecordingNodeMemory() {
  for (Request& r : requests_) {
    if (!r.freed) munmap(r.p, RoundUpToPages(r.bytes));
  }
}

StatusOr<void*> RecordingNodeMemory::Record(size_t bytes, int node,
                                            const std::vector<int>& interleave) {
  ELLM_ASSIGN_OR_RETURN(void* p, MapAndBind(bytes, MPOL_DEFAULT, {}, "recording allocator"));
  std::lock_guard lock(mu_);
  requests_.push_back(Request{.p = p, .bytes = bytes, .node = node, .interleave = interleave});
  return p;
}

StatusOr<void*> RecordingNodeMemory::Allocate(size_t bytes, int node) {
  return Record(bytes, node, {});
}

StatusOr<void*> RecordingNodeMemory::AllocateInterleaved(size_t bytes,
                                                         const std::vector<int>& nodes) {
  return Record(bytes, -1, nodes);
}

void RecordingNodeMemory::Free(void* p, size_t bytes) {
  if (p == nullptr) return;
  std::lock_guard lock(mu_);
  for (Request& r : requests_) {
    if (r.p != p || r.freed) continue;
    if (RoundUpToPages(r.bytes) != RoundUpToPages(bytes)) {
      // A caller bug: munmap with the wrong size would leak or unmap a neighbour.
      std::fprintf(stderr, "RecordingNodeMemory: Free(%p, %zu) of an allocation of %zu bytes\n", p,
                   bytes, r.bytes);
      std::abort();
    }
    munmap(p, RoundUpToPages(r.bytes));
    r.freed = true;
    return;
  }
  std::fprintf(stderr, "RecordingNodeMemory: Free(%p) of memory it did not allocate\n", p);
  std::abort();
}

std::vector<RecordingNodeMemory::Request> RecordingNodeMemory::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

Status InterleaveRange(void* addr, size_t bytes, const std::vector<int>& nodes) {
  if (bytes == 0) return OkStatus();
  uintptr_t begin = reinterpret_cast<uintptr_t>(addr) / PageSize() * PageSize();
  uintptr_t end = RoundUpToPages(reinterpret_cast<uintptr_t>(addr) + bytes);
  return Bind(reinterpret_cast<void*>(begin), end - begin, MPOL_INTERLEAVE, nodes,
              "interleaving " + FormatBytes(bytes) + " over NUMA nodes");
}

Status MoveRangeToNodes(void* addr, size_t bytes, const std::vector<int>& nodes) {
  if (bytes == 0 || nodes.empty()) return OkStatus();
  uintptr_t begin = reinterpret_cast<uintptr_t>(addr) / PageSize() * PageSize();
  uintptr_t end = RoundUpToPages(reinterpret_cast<uintptr_t>(addr) + bytes);
  return Bind(reinterpret_cast<void*>(begin), end - begin,
              nodes.size() == 1 ? MPOL_BIND : MPOL_INTERLEAVE, nodes,
              "placing " + FormatBytes(bytes) + " of weights on NUMA nodes", MPOL_MF_MOVE);
}

StatusOr<int> NodeOfPage(const void* p) {
  void* page = const_cast<void*>(p);
  int status = -1;
  if (move_pages(0, 1, &page, nullptr, &status, 0) != 0) {
    int err = errno;
    if (err == ENOSYS && numa_available() < 0) return 0;  // no NUMA: everything is node 0
    return ErrnoError(err, "move_pages");
  }
  if (status == -ENOENT) return NotFoundError("NodeOfPage: the page has not been touched yet");
  if (status < 0) return ErrnoError(-status, "move_pages");
  return status;
}

Status LockMemory(const void* addr, size_t bytes, std::string_view what) {
  if (bytes == 0 || mlock(addr, bytes) == 0) return OkStatus();
  const int err = errno;
  std::string head = "cannot lock " + std::string(what) + " (" + FormatBytes(bytes) +
                     ") in memory: mlock: " + std::strerror(err);
  if (err == EAGAIN)
    return ResourceExhaustedError(head + " (part of the range could not be locked)");
  if (err != ENOMEM && err != EPERM) return ErrnoError(err, head);
  rlimit limit{};
  getrlimit(RLIMIT_MEMLOCK, &limit);
  if (limit.rlim_cur == RLIM_INFINITY) {
    // ENOMEM with no limit: the memory itself is missing.
    return ResourceExhaustedError(head +
                                  "; RLIMIT_MEMLOCK is unlimited, so the machine lacks the free "
                                  "memory to hold it; free some memory or turn mlock off");
  }
  return ResourceExhaustedError(
      head + "; RLIMIT_MEMLOCK is " + FormatLimit(limit.rlim_cur) + " (soft) / " +
      FormatLimit(limit.rlim_max) + " (hard), this process has " + FormatBytes(LockedBytes()) +
      " locked already and needs " + FormatBytes(RoundUpToPages(bytes)) +
      " more. Raise the limit with LimitMEMLOCK=infinity in the [Service] section of the "
      "systemd unit, or `ulimit -l unlimited` in the shell that starts ellm (above the hard "
      "limit only as root); or turn mlock off");
}

void UnlockMemory(const void* addr, size_t bytes) {
  if (bytes != 0) munlock(addr, bytes);
}

}  // namespace ellm

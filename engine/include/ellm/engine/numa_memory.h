// Memory on a chosen NUMA node, and locking it in RAM.
//
// NodeMemory hands out anonymous, page-aligned mappings whose pages the
// kernel will take from a given node (mbind(2) MPOL_BIND) or spread over
// several (MPOL_INTERLEAVE). The policy applies when a page is first
// touched, so memory that is never written costs nothing. Tests pass a
// RecordingNodeMemory to see which node each allocation asked for.
//
// Weights: mbind(2) ignores the policy for MAP_SHARED file mappings, and
// pages of a MAP_PRIVATE file mapping stay in the page cache wherever the
// first reader put them. Weights placed by NumaPlan must therefore be
// copied out of the GGUF mapping into memory from here (AllocateInterleaved
// for kInterleave, Allocate(node) per replica or for kLocal).
#pragma once

#include <cstddef>
#include <mutex>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"

namespace ellm {

class NodeMemory {
 public:
  virtual ~NodeMemory() = default;
  // `bytes` rounded up to whole pages, page-aligned and zero-filled, whose
  // pages come from `node` (an OS node id) or, for node < 0, wherever the
  // kernel's default policy puts them. Errors name the node and the size.
  virtual StatusOr<void*> Allocate(size_t bytes, int node) = 0;
  // As Allocate, pages round-robin over `nodes` (all nodes if empty).
  virtual StatusOr<void*> AllocateInterleaved(size_t bytes, const std::vector<int>& nodes) = 0;
  // REQUIRES: p came from this object's Allocate* with the same `bytes`.
  virtual void Free(void* p, size_t bytes) = 0;
};

// mmap(2) + mbind(2). On a one-node machine whose kernel refuses mbind
// (ENOSYS, or EPERM under a seccomp filter) the binding is skipped, since
// every page lands on the one node anyway; on a multi-node machine that is
// an error. Stateless and thread-safe.
NodeMemory& SystemNodeMemory();

// For tests: records every request, hands out plain (unbound) memory.
// Thread-safe. Free with a size other than the allocation's aborts.
class RecordingNodeMemory : public NodeMemory {
 public:
  struct Request {
    void* p = nullptr;
    size_t bytes = 0;             // as asked, before rounding to pages
    int node = -1;                // Allocate's node; -1 for interleaved
    std::vector<int> interleave;  // AllocateInterleaved's nodes
    bool freed = false;
  };
  ~RecordingNodeMemory() override;  // frees whatever is still allocated
  StatusOr<void*> Allocate(size_t bytes, int node) override;
  StatusOr<void*> AllocateInterleaved(size_t bytes, const std::vector<int>& nodes) override;
  void Free(void* p, size_t bytes) override;
  // A copy, in request order.
  std::vector<Request> requests() const;

 private:
  StatusOr<void*> Record(size_t bytes, int node, const std::vector<int>& interleave);
  mutable std::mutex mu_;
  std::vector<Request> requests_;
};

// Sets MPOL_INTERLEAVE over `nodes` on an existing anonymous mapping (e.g.
// one the caller made itself), for pages not yet touched. addr is rounded
// down and the end up to pages. Same one-node leniency as SystemNodeMemory.
Status InterleaveRange(void* addr, size_t bytes, const std::vector<int>& nodes);

// The node holding the page at `p` (move_pages(2) query). NotFound if the
// page has not been touched yet.
// Binds [addr, addr + bytes) (widened to whole pages) to `nodes` (one node:
// bound there; several: interleaved) and migrates pages already touched
// (MPOL_MF_MOVE). For weights packed into ordinary memory before the plan
// was known. A one-node machine whose kernel refuses mbind succeeds.
Status MoveRangeToNodes(void* addr, size_t bytes, const std::vector<int>& nodes);

StatusOr<int> NodeOfPage(const void* p);

// mlock(2) of [addr, addr + bytes): every page is faulted in now and never
// swapped. `what` names the memory for the message ("model weights", "KV
// cache"). When the kernel refuses because of RLIMIT_MEMLOCK, the error
// (ResourceExhausted) names the limit, its soft and hard values, the bytes
// already locked and needed, and how to raise it (LimitMEMLOCK= in the
// systemd unit, ulimit -l).
Status LockMemory(const void* addr, size_t bytes, std::string_view what);
// munlock(2); errors are ignored (unlocking what was never locked is fine).
void UnlockMemory(const void* addr, size_t bytes);

}  // namespace ellm

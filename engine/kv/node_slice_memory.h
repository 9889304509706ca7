// KV slices from NUMA node memory (numa_memory.h), optionally locked in RAM
// (mlock; the error names RLIMIT_MEMLOCK when the limit is too low).
#pragma once

#include "ellm/engine/numa_memory.h"
#include "kv/kv_cache.h"

namespace ellm::kv {

class NodeSliceMemory final : public SliceMemory {
 public:
  NodeSliceMemory(NodeMemory& memory, bool lock) : memory_(memory), lock_(lock) {}
  StatusOr<void*> Allocate(size_t bytes, int node) override;
  void Free(void* p, size_t bytes) override;

 private:
  NodeMemory& memory_;
  bool lock_;
};

}  // namespace ellm::kv

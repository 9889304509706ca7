#include "kv/node_slice_memory.h"

namespace ellm::kv {

StatusOr<void*> NodeSliceMemory::Allocate(size_t bytes, int node) {
  ELLM_ASSIGN_OR_RETURN(void* p, memory_.Allocate(bytes, node));
  if (lock_) {
    Status s = LockMemory(p, bytes, "KV cache");
    if (!s.ok()) {
      memory_.Free(p, bytes);
      return s;
    }
  }
  return p;
}

void NodeSliceMemory::Free(void* p, size_t bytes) {
  if (lock_) UnlockMemory(p, bytes);
  memory_.Free(p, bytes);
}

}  // namespace ellm::kv

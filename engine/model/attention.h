// Causal attention over the KV cache with online softmax: keys are visited
// in tiles and folded into a running max / sum / weighted V, so no score
// matrix (L x L or L x batch) is ever materialised.
#pragma once

#include <cstdint>

#include "ellm/engine/thread_pool.h"
#include "model/kv_cache.h"

namespace ellm::model {

struct AttentionShape {
  int n_head;
  int n_head_kv;
  int head_dim_k;
  int head_dim_v;
  int window;  // 0 = full attention; else a query at p sees keys (p - window, p]
};

// q:   [n_tokens, n_head * head_dim_k], already scaled; token t is at position pos0 + t.
// out: [n_tokens, n_head * head_dim_v].
// REQUIRES: K/V rows for positions up to pos0 + n_tokens - 1 are in `cache` for layer il.
void Attention(const AttentionShape& shape, KvCache& cache, int il, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, ThreadPool& pool);

}  // namespace ellm::model

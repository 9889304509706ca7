// Perplexity of a text under a model, chunked exactly as the acceptance
// checks (and llama.cpp's reference runs in tests/reference/) define it:
// tokenize with BOS; split the text tokens after BOS into consecutive
// chunks of ctx-1; evaluate [BOS] + chunk in an empty cache; score
// positions 1..ctx-1 (-log softmax of the previous position's logits at the
// actual token); drop the last partial chunk.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/engine.h"

namespace ellm {

struct PerplexityResult {
  int64_t ctx = 0;
  int64_t chunks = 0;
  int64_t tokens = 0;             // scored positions
  double nll = 0;                 // mean negative log-likelihood (nats)
  double ppl = 0;                 // exp(nll)
  std::vector<double> chunk_nll;  // mean per chunk
  KvStats kv;                     // the session's KV cache at the end
};

struct PerplexityOptions {
  int64_t ctx = 512;
  int64_t micro_batch = 512;
  // KV storage, budget and spill directory (n_ctx and micro_batch above win).
  SessionOptions session;
  int64_t max_chunks = 0;  // 0 = all
  // Called after each chunk with (chunks done, chunks total, nll so far).
  std::function<void(int64_t, int64_t, double)> progress;
};

StatusOr<PerplexityResult> ComputePerplexity(Engine& engine, std::string_view text,
                                             const PerplexityOptions& options);

}  // namespace ellm

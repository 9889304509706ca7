// Session::State: what one session holds besides its positions — its KV
// cache and scratch buffers sized for one micro-batch, reused across calls.
// Shared by the facade (engine.cc: created by Engine::NewSession) and the
// forward pass (model/forward.cc: Session::Eval).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ellm/engine/engine.h"
#include "kv/kv_cache.h"
#include "model/attention.h"
#include "model/model.h"
#include "ops/matmul.h"

namespace ellm {

struct Session::State {
  State(const model::Model& m, const SessionOptions& o, std::unique_ptr<kv::KvCache> kv)
      : cache(std::move(kv)),
        bf16_weights(o.bf16_attention_weights),
        pair_scores(ResolveAttnScores(o.attn_scores) == AttnScores::kPairs),
        tiles(ResolveAttnScores(o.attn_scores) == AttnScores::kTiles),
        sparse(o.sparse_attention) {
    const model::HParams& hp = m.hparams();
    const int64_t mb = o.micro_batch;
    micro_batch = mb;
    x.resize(mb * hp.n_embd);
    h.resize(mb * hp.n_embd);
    q.resize(mb * hp.n_head * hp.head_dim_k);
    k.resize(mb * hp.n_head_kv * hp.head_dim_k);
    v.resize(mb * hp.n_head_kv * hp.head_dim_v);
    attn.resize(mb * hp.n_head * hp.head_dim_v);
    gate.resize(mb * hp.n_ff);
    up.resize(mb * hp.n_ff);
    if (sparse.top_k_blocks > 0) summaries.resize(m.layers().size());
  }
  std::unique_ptr<kv::KvCache> cache;
  bool bf16_weights = false;  // SessionOptions::bf16_attention_weights
  bool pair_scores = true;    // SessionOptions::attn_scores, resolved
  bool tiles = false;         // the same: AttnScores::kTiles
  SparseAttentionOptions sparse;
  std::vector<model::SparseSummaries> summaries;  // per layer, with sparse attention
  // The cache's contents were replaced: every block's bounds are recomputed.
  void ForgetSummaries() {
    for (model::SparseSummaries& s : summaries) s.blocks = 0;
  }
  int64_t micro_batch;
  std::vector<float> x, h, q, k, v, attn, gate, up, logits;
  std::vector<uint8_t> emb_row;  // one stored embedding row, unpacked
  ops::MatMulScratch mm;
  model::AttentionScratch attn_scratch;
  std::vector<model::AttentionPlacement> attn_placement;  // per layer
};

}  // namespace ellm

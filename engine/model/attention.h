// Causal attention over the KV cache with online softmax (Milakov &
// Gimelshein 2018; the tiling of FlashAttention, Dao et al. 2022): keys
// stream through in chunks of cache blocks and tiles of kKeyTile, folded
// into a running max / sum / weighted V per query row, so no score matrix
// (L x L or L x batch) is ever materialised: the scratch is one tile of
// scores per thread plus the running state of the micro-batch's rows.
//
// Work split: rows are (token, query head) pairs grouped by KV head (the
// query heads sharing a KV head read the same keys, converted to f32 once
// per tile); tasks are (KV head, tile of rows, key split). Key tiles are
// dealt to splits by absolute tile index (one split per thread, in every
// call), so one-token decode keeps every thread busy and a row's result does
// not depend on how the tokens were batched: prefill and decode agree bit
// for bit. The splits' partial states are merged at the end.
//
// Placement (NUMA, docs/numa.md): by default any pool thread claims any
// task. Given an AttentionPlacement whose thread ranges do not all cover the
// whole pool, the tasks of KV head h are dealt statically to the threads of
// kv_head_threads[h] (the node holding h's slices): task i of head h runs
// on thread begin + i % size, in every chunk of every call. Which thread
// runs a task never changes its arithmetic, and the merge order is fixed,
// so results are the same bit for bit with or without placement.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/engine.h"
#include "ellm/engine/numa.h"
#include "ellm/engine/thread_pool.h"
#include "kv/kv_cache.h"

namespace ellm::model {

struct AttentionShape {
  int n_head;
  int n_head_kv;
  int head_dim_k;
  int head_dim_v;
  int window;  // 0 = full attention; else a query at p sees keys (p - window, p]
  // With a bf16 cache: weights rounded to bf16 and the product with V done
  // by bf16 pair dot products (attn_tile.h AccumulateBf16Pairs).
  bool bf16_weights = false;
  // Approximate attention (SessionOptions::sparse_attention), full-attention
  // layers only; top_k_blocks 0 = exact.
  SparseAttentionOptions sparse;
  // With a bf16 cache: scores by bf16 pair dot products (attn_tile.h
  // ScoresBf16); false: keys widened to f32, as f16 (AttnScores::kF32).
  bool bf16_pair_scores = true;
  // With a bf16 cache: both products on bf16 tiles (AttnScores::kTiles,
  // attn_tile.h ScoresBf16Tiles / AccumulateBf16Tiles), weights rounded to
  // bf16; overrides the two flags above.
  bool bf16_tiles = false;
};

// Per layer, for sparse attention: the bounds of every complete block of
// kSparseBlock keys, [block][kv head][2 * head_dim_k] (the keys' per-dimension
// max, then min), for blocks [0, blocks). Attention brings them up to date
// (blocks holding positions it is given are recomputed: a rewound cache is
// followed).
inline constexpr int kSparseBlock = 64;
struct SparseSummaries {
  std::vector<float> bounds;
  int64_t blocks = 0;
};

// Which pool threads run each KV head's tasks.
struct AttentionPlacement {
  // [n_head_kv] ranges of pool thread indices, each non-empty and within the
  // pool; empty = no steering.
  std::vector<ThreadRange> kv_head_threads;
  // Tests: called as (pool thread, KV head) for every steered task, on the
  // thread that runs it. Not called without steering.
  std::function<void(int thread, int kv_head)> on_task;
};
// The placement of layer il under `plan`: each head on KvHeadThreads; none
// when the plan uses one node or none (kOff).
AttentionPlacement PlacementForLayer(const NumaPlan& plan, int il);

// Running softmax state of every task and rounded queries, reused across
// calls.
struct AttentionScratch {
  std::vector<float> state;
  std::vector<float> q;  // the call's queries rounded to K's precision
  // Sparse attention: per row tile and KV head, which key tiles it reads.
  std::vector<uint8_t> keep;
};

// q:   [n_tokens, n_head * head_dim_k], already scaled; token t is at position pos0 + t.
// out: [n_tokens, n_head * head_dim_v].
// REQUIRES: K/V rows for positions up to pos0 + n_tokens - 1 are in `cache`
// for layer il. Errors: only from reading spilled blocks back.
// `summaries`: layer il's, required when shape.sparse is on for a
// full-attention layer (ignored otherwise).
Status Attention(const AttentionShape& shape, kv::KvCache& cache, int il, const float* q,
                 int64_t n_tokens, int64_t pos0, float* out, ThreadPool& pool,
                 AttentionScratch& scratch, const AttentionPlacement& placement = {},
                 SparseSummaries* summaries = nullptr);

// One Attention call's arguments (AttentionBatch).
struct AttentionCall {
  AttentionShape shape;
  kv::KvCache* cache;
  const float* q;
  int64_t n_tokens;
  int64_t pos0;
  float* out;
  AttentionScratch* scratch;
  const AttentionPlacement* placement;  // not null
  SparseSummaries* summaries;
};
// Attention for several calls of layer il (batched decode: one per
// session), each as Attention would run it, with the same bits. When no
// call steers and none shares another's cache or scratch, round r acquires
// every call's r-th chunk and runs all their tasks in one pool call: one
// hand-off per round instead of one per call, and the threads balance
// across calls. Otherwise the calls run one after another.
Status AttentionBatch(std::span<const AttentionCall> calls, int il, ThreadPool& pool);

}  // namespace ellm::model

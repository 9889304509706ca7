#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/activations.h"
#include "kernels/attn_tile.h"

namespace ellm::model {
namespace {

using kv::kBlockPositions;

// Keys per tile: 64 f32 rows of K and of V (64 KiB each at head size 256)
// stay in L2 while every row of the task's tile is folded in.
constexpr int kKeyTile = 64;
static_assert(kBlockPositions % kKeyTile == 0, "a key tile never straddles two blocks");
static_assert(kSparseBlock == kKeyTile, "sparse attention keeps or skips whole key tiles");
// Query rows per task. A full-attention layer converts each key tile (and
// streams it from memory: 32 MiB of f16 K/V per 32K positions) once per
// row tile, so its tiles are large: 256 rows (64 tokens of a 4-query-head
// group) cut the conversions to a fifth of 48 rows' (ellm_bench_attention,
// Gemma 3 global layer at 32K, 1 thread: 339 -> 296 ms per 256 tokens; 2
// threads 191 -> 173 ms). A sliding-window layer's row tile sees the window
// plus the tile's own span of keys, so its tiles stay small (48 rows waste
// 12 of ~524 keys per row, 256 rows 64). Results never depend on the tile.
constexpr int kRowsPerTileFull = 256;
constexpr int kRowsPerTileWindowed = 48;
// Row tiles up to this many read 16-bit K and V directly (see RunTask).
constexpr int kFusedMaxRows = 16;
// Most key splits (see Attention).
constexpr int kMaxSplits = 8;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Floats between f32 rows of V converted for the prefill kernels: a row is
// 1 KiB at head size 256, and Accumulate reads a 32-column strip of 64 rows
// (8 KiB) once per 8 query rows; at a 1 KiB stride those lines fall in 8 of
// L1's 64 sets and evict one another, padded they spread over all of them
// (Accumulate in isolation, 48 x 64 x 256: 64 -> 74 GMAC/s).
constexpr int kVRowPad = 16;

// `rows` stored rows of `dim` elements (row_bytes apart) to f32 rows
// `stride` floats apart in buf; returns where they are (f32 storage is
// used in place, at its own stride `dim`).
const float* ToF32(KvType type, const uint8_t* src, int rows, int dim, size_t row_bytes, float* buf,
                   int64_t stride) {
  const kernels::AttnTileKernels& k = kernels::GetAttnTile();
  if (type == KvType::kF32) return reinterpret_cast<const float*>(src);
  if (stride == dim) {  // contiguous: one call
    row_bytes *= static_cast<size_t>(rows);
    dim *= rows;
    rows = 1;
  }
  for (int r = 0; r < rows; ++r) {
    const uint8_t* from = src + r * row_bytes;
    float* to = buf + r * stride;
    switch (type) {
      case KvType::kF32:
        break;
      case KvType::kF16:
        k.f16_to_f32(dim, reinterpret_cast<const uint16_t*>(from), to);
        break;
      case KvType::kBF16:
        k.bf16_to_f32(dim, reinterpret_cast<const uint16_t*>(from), to);
        break;
      case KvType::kQ8_0:
        k.q8_0_to_f32(dim, from, to);
        break;
    }
  }
  return buf;
}

// max(x[0..n)), n >= 1: eight running maxima in one vector (GCC turns the
// std::max form into scalar vmaxss, ~1% of the 1B's prefill at 4K), then
// the rest; the maximum of non-NaN floats is the same in any order.
float MaxOf(const float* x, int n) {
  using V8 = float __attribute__((vector_size(32)));
  float r = x[0];
  int j = 1;
  if (n >= 8) {
    V8 m, v;
    std::memcpy(&m, x, sizeof(m));
    for (j = 8; j + 8 <= n; j += 8) {
      std::memcpy(&v, x + j, sizeof(v));
      m = m > v ? m : v;
    }
    for (int k = 0; k < 8; ++k) r = std::max(r, m[k]);
  }
  for (; j < n; ++j) r = std::max(r, x[j]);
  return r;
}

// l[r] += sum of row r's weights s[r * ss + first[r] ...][0, n[r]), each a
// sequential sum from 0 in key order (rows with n[r] == 0 add nothing).
// Eight rows, or four, with the same span run interleaved: the sums are
// latency-bound chains, and eight keep both add ports busy.
template <int N>
bool SameSpan(int r, const int* first, const int* n) {
  if (n[r] == 0) return false;
  for (int k = 1; k < N; ++k) {
    if (n[r + k] != n[r] || first[r + k] != first[r]) return false;
  }
  return true;
}
template <int N>
void AddInterleaved(const float* x0, int64_t ss, int n, float* l) {
  float sum[N] = {};
  for (int j = 0; j < n; ++j) {
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) sum[k] += x0[k * ss + j];
  }
  for (int k = 0; k < N; ++k) l[k] += sum[k];
}
void AddRowSums(int rows, const float* s, int64_t ss, const int* first, const int* n, float* l) {
  int r = 0;
  while (r < rows) {
    if (r + 8 <= rows && SameSpan<8>(r, first, n)) {
      AddInterleaved<8>(s + r * ss + first[r], ss, n[r], l + r);
      r += 8;
    } else if (r + 4 <= rows && SameSpan<4>(r, first, n)) {
      AddInterleaved<4>(s + r * ss + first[r], ss, n[r], l + r);
      r += 4;
    } else {
      if (n[r] > 0) AddInterleaved<1>(s + r * ss + first[r], ss, n[r], l + r);
      ++r;
    }
  }
}

struct Plan {
  AttentionShape shape;
  KvType type;
  int group;        // query heads per KV head
  int tile_tokens;  // tokens per row tile
  int64_t n_tiles;  // row tiles per KV head
  int splits;       // key splits per row tile
  int64_t n_tokens, pos0;
  int64_t state_stride;  // floats of running state per task
  int64_t Lo(int64_t p) const {
    return shape.window > 0 ? std::max<int64_t>(0, p - shape.window + 1) : 0;
  }
};

// Running state of one task: m[rows], l[rows], o[rows][head_dim_v].
struct TaskState {
  float* m;
  float* l;
  float* o;
};
TaskState StateOf(const Plan& plan, std::vector<float>& state, int64_t task) {
  const int rows = plan.tile_tokens * plan.group;
  float* base = state.data() + task * plan.state_stride;
  return {base, base + rows, base + 2 * rows};
}

// Folds keys [j_lo, j_hi] of one chunk into one task's rows.
// keep: sparse attention's choice for this task's row tile, by absolute key
// tile (nullptr: every tile).
void RunTask(const Plan& plan, const kv::KvCache& cache,
             const std::vector<kv::KvCache::BlockView>& views, const float* q, int64_t task,
             int64_t j_lo, int64_t j_hi, std::vector<float>& state, const uint8_t* keep) {
  const AttentionShape& sh = plan.shape;
  const kernels::AttnTileKernels& kern = kernels::GetAttnTile();
  const int64_t per_head = plan.n_tiles * plan.splits;
  const int kvh = static_cast<int>(task / per_head);
  const int64_t tile = (task % per_head) / plan.splits;
  const int split = static_cast<int>(task % plan.splits);
  const int64_t t0 = tile * plan.tile_tokens;
  const int64_t t1 = std::min(plan.n_tokens, t0 + plan.tile_tokens);
  const int rows = static_cast<int>((t1 - t0) * plan.group);
  const int64_t first_lo = plan.Lo(plan.pos0 + t0), last_p = plan.pos0 + t1 - 1;
  const int64_t lo = std::max(j_lo, first_lo), hi = std::min(j_hi, last_p);
  if (lo > hi) return;

  thread_local std::vector<float> qbuf, kbuf, vbuf, sbuf;
  thread_local std::vector<uint32_t> vpairs;
  thread_local std::vector<int> span_first, span_n;
  const int dk = sh.head_dim_k, dv = sh.head_dim_v;
  qbuf.resize(static_cast<size_t>(rows) * dk);
  kbuf.resize(static_cast<size_t>(kKeyTile) * dk);
  vbuf.resize(static_cast<size_t>(kKeyTile) * (dv + kVRowPad));
  sbuf.resize(static_cast<size_t>(rows) * kKeyTile);
  span_first.resize(static_cast<size_t>(rows));
  span_n.resize(static_cast<size_t>(rows));
  // q is already rounded (Attention does it once per call); a token's rows
  // for this KV head are adjacent query heads: group * dk floats to copy.
  const int64_t q_row = int64_t{sh.n_head} * dk;
  const int64_t group_floats = int64_t{plan.group} * dk;
  for (int64_t t = t0; t < t1; ++t) {
    const float* src = q + t * q_row + int64_t{kvh} * group_floats;
    std::copy(src, src + group_floats, qbuf.data() + (t - t0) * group_floats);
  }
  // Halves are widened inside the kernels when few rows share each key
  // tile (decode): converting the tile to f32 first would cost more than
  // the products. Same arithmetic either way (widening is exact).
  // bf16 keys with pair scores always go to their own Scores (bf16 pair
  // dot products, see attn_tile.h), for every tile, so batched and
  // one-token scores agree; without, they are widened as f16 keys are.
  const bool bf16 = plan.type == KvType::kBF16;
  // AMX tiles (AttnScores::kTiles): both products, every tile.
  const bool tiles = bf16 && sh.bf16_tiles;
  const bool pair_scores = bf16 && sh.bf16_pair_scores;
  const bool fused = (bf16 || plan.type == KvType::kF16) && rows <= kFusedMaxRows;
  const bool fused_k = fused || pair_scores || tiles;
  // Opt-in bf16 weights (and tiles): V as key pairs for AccumulateBf16Pairs
  // (AccumulateBf16Tiles), every tile.
  const bool pairs = bf16 && (sh.bf16_weights || tiles);
  if (pairs) vpairs.resize(static_cast<size_t>(kKeyTile / 2) * dv);
  const kernels::ActivationKernels& ak = kernels::GetActivationKernels();
  const auto fused_scores = tiles         ? kern.scores_bf16_tiles
                            : pair_scores ? kern.scores_bf16
                            : bf16        ? kern.scores_bf16_wide
                                          : kern.scores_f16;
  const auto fused_accumulate = bf16 ? kern.accumulate_bf16 : kern.accumulate_f16;
  TaskState st = StateOf(plan, state, task);
  const size_t k_row_bytes = cache.k_row_bytes(), v_row_bytes = cache.v_row_bytes();
  const int64_t chunk_first = views.front().first_pos;
  for (int64_t j0 = lo / kKeyTile * kKeyTile; j0 <= hi; j0 += kKeyTile) {
    // Tiles go to splits by absolute index: the same in every call.
    if ((j0 / kKeyTile) % plan.splits != split) continue;
    if (keep != nullptr && keep[j0 / kKeyTile] == 0) continue;
    const int64_t a = std::max(j0, lo), b = std::min(j0 + kKeyTile - 1, hi);
    const int nk = static_cast<int>(b - a + 1);
    const kv::KvCache::BlockView& view =
        views[static_cast<size_t>((a - chunk_first) / kBlockPositions)];
    const uint8_t* slice = view.slices[kvh];
    const int64_t row0 = a - view.first_pos;
    const uint8_t* k_rows = slice + row0 * k_row_bytes;
    const uint8_t* v_rows = slice + kBlockPositions * k_row_bytes + row0 * v_row_bytes;
    const float* vf = nullptr;
    int64_t vf_stride = dv;
    float* s = sbuf.data();
    // The kernels read V in column strips and K several rows at a time,
    // which the hardware prefetchers follow poorly from DRAM: this thread's
    // next tile is asked for while this one is worked on, its K during
    // these scores and its V during the weighted sum, a line per step of
    // the kernels' inner loops (one burst per tile would stall the work's
    // own loads behind it).
    const uint8_t* next_k = nullptr;
    const uint8_t* next_v = nullptr;
    int64_t next_k_bytes = 0, next_v_bytes = 0;
    if (fused) {
      int64_t next = j0 + int64_t{plan.splits} * kKeyTile;
      while (keep != nullptr && next <= hi && keep[next / kKeyTile] == 0) {
        next += int64_t{plan.splits} * kKeyTile;
      }
      if (next <= hi) {
        const int64_t nb = (next - chunk_first) / kBlockPositions;
        const kv::KvCache::BlockView& nv = views[static_cast<size_t>(nb)];
        const int64_t nrows = std::min<int64_t>(kKeyTile, hi - next + 1);
        const uint8_t* nslice = nv.slices[kvh];
        next_k = nslice + (next - nv.first_pos) * k_row_bytes;
        next_k_bytes = nrows * static_cast<int64_t>(k_row_bytes);
        next_v = nslice + kBlockPositions * k_row_bytes + (next - nv.first_pos) * v_row_bytes;
        next_v_bytes = nrows * static_cast<int64_t>(v_row_bytes);
      }
    }
    // With bf16 weights, keys pair up at even positions whatever the tile's
    // first key (so batched and one-token chains meet the same pairs): a
    // tile starting at an odd key leads with a pad of weight 0 and V 0.
    // Tiles sum chunks of 32 keys from multiples of 32, so theirs leads
    // with up to 31 pads (a tile never crosses its 64-key boundary).
    const int lead = tiles ? static_cast<int>(a & 31) : pairs ? static_cast<int>(a & 1) : 0;
    float* s_keys = s + lead;
    if (fused_k) {
      fused_scores(rows, nk, dk, qbuf.data(), dk, reinterpret_cast<const uint16_t*>(k_rows), dk,
                   s_keys, kKeyTile, next_k, next_k_bytes);
    } else {
      const float* kf = ToF32(plan.type, k_rows, nk, dk, k_row_bytes, kbuf.data(), dk);
      kern.scores(rows, nk, dk, qbuf.data(), dk, kf, dk, s_keys, kKeyTile);
    }
    if (pairs) {
      const auto* v16 = reinterpret_cast<const uint16_t*>(v_rows);
      // Pads: whole pairs of zeros, then (odd lead) a pair of a zero and
      // the first key; the tile's rows pair up from there.
      uint32_t* vp = vpairs.data();
      std::fill(vp, vp + int64_t{lead / 2} * dv, 0u);
      vp += int64_t{lead / 2} * dv;
      if (lead % 2 == 1) {
        for (int d = 0; d < dv; ++d) vp[d] = uint32_t{v16[d]} << 16;
        kern.interleave_bf16_pairs(nk - 1, dv, v16 + dv, dv, vp + dv, next_v, next_v_bytes);
      } else {
        kern.interleave_bf16_pairs(nk, dv, v16, dv, vp, next_v, next_v_bytes);
      }
    } else if (!fused) {
      const bool in_place = plan.type == KvType::kF32;
      vf_stride = in_place ? dv : dv + kVRowPad;
      vf = ToF32(plan.type, v_rows, nk, dv, v_row_bytes, vbuf.data(), vf_stride);
    }
    // From here the tile's keys are [ta, ta + tn): the pad, if any, is key
    // ta, outside every row's span.
    const int64_t ta = a - lead;
    const int tn = nk + lead;
    // Softmax step, row by row: new maximum, rescale, shift. Then one exp
    // over the whole tile (a row's few calls were bound by the polynomial's
    // latency) and the sums of the weights, several rows at a time (each
    // still one sequential sum in key order: interleaving rows only hides
    // the add latency).
    for (int r = 0; r < rows; ++r) {
      float* sr = s + r * kKeyTile;
      const int64_t p = plan.pos0 + t0 + r / plan.group;
      // The keys of this tile the row sees: [jv0, jv1). The others get -inf,
      // so they weigh exactly 0 after the exp (and add nothing to the sum).
      const int jv0 = static_cast<int>(std::clamp<int64_t>(plan.Lo(p) - ta, 0, tn));
      const int jv1 = static_cast<int>(std::clamp<int64_t>(p - ta + 1, 0, tn));
      span_first[r] = jv0;
      span_n[r] = std::max(0, jv1 - jv0);
      if (jv0 >= jv1) {
        std::fill(sr, sr + tn, kNegInf);
        continue;
      }
      std::fill(sr, sr + jv0, kNegInf);
      std::fill(sr + jv1, sr + tn, kNegInf);
      const float m_new = std::max(st.m[r], MaxOf(sr + jv0, jv1 - jv0));
      if (m_new != st.m[r]) {
        const float scale = std::exp(st.m[r] - m_new);
        st.l[r] *= scale;
        float* o = st.o + int64_t{r} * dv;
        for (int d = 0; d < dv; ++d) o[d] *= scale;
        st.m[r] = m_new;
      }
      const int nv = jv1 - jv0;
      float* sv = sr + jv0;
      for (int j = 0; j < nv; ++j) sv[j] -= m_new;
    }
    if (tn == kKeyTile) {
      kern.exp(int64_t{rows} * kKeyTile, s, s);
    } else {
      for (int r = 0; r < rows; ++r) kern.exp(tn, s + r * kKeyTile, s + r * kKeyTile);
    }
    if (pairs) {  // the weights the product uses, and the sums of exactly those
      if (tn == kKeyTile) {
        ak.round_bf16(s, s, int64_t{rows} * kKeyTile);
      } else {
        for (int r = 0; r < rows; ++r) ak.round_bf16(s + r * kKeyTile, s + r * kKeyTile, tn);
      }
    }
    AddRowSums(rows, s, kKeyTile, span_first.data(), span_n.data(), st.l);
    if (tiles) {
      kern.accumulate_bf16_tiles(rows, tn, dv, s, kKeyTile, vpairs.data(), st.o, dv);
    } else if (pairs) {
      kern.accumulate_bf16_pairs(rows, tn, dv, s, kKeyTile, vpairs.data(), st.o, dv);
    } else if (fused) {
      fused_accumulate(rows, nk, dv, s, kKeyTile, reinterpret_cast<const uint16_t*>(v_rows), dv,
                       st.o, dv, next_v, next_v_bytes);
    } else {
      kern.accumulate(rows, nk, dv, s, kKeyTile, vf, vf_stride, st.o, dv);
    }
  }
}

// Merges the key splits of every row tile and writes the normalised rows.
void Finish(const Plan& plan, std::vector<float>& state, float* out) {
  const AttentionShape& sh = plan.shape;
  const int dv = sh.head_dim_v;
  const int64_t o_row = int64_t{sh.n_head} * dv;
  for (int kvh = 0; kvh < sh.n_head_kv; ++kvh) {
    for (int64_t tile = 0; tile < plan.n_tiles; ++tile) {
      const int64_t t0 = tile * plan.tile_tokens;
      const int64_t t1 = std::min(plan.n_tokens, t0 + plan.tile_tokens);
      const int64_t task0 = (kvh * plan.n_tiles + tile) * plan.splits;
      for (int r = 0; r < (t1 - t0) * plan.group; ++r) {
        float m = kNegInf;
        for (int s = 0; s < plan.splits; ++s) m = std::max(m, StateOf(plan, state, task0 + s).m[r]);
        float* o =
            out + (t0 + r / plan.group) * o_row + int64_t{kvh * plan.group + r % plan.group} * dv;
        std::fill(o, o + dv, 0.0f);
        float l = 0.0f;
        for (int s = 0; s < plan.splits; ++s) {
          TaskState st = StateOf(plan, state, task0 + s);
          if (st.m[r] == kNegInf) continue;
          const float w = plan.splits == 1 ? 1.0f : std::exp(st.m[r] - m);
          l += w * st.l[r];
          for (int d = 0; d < dv; ++d) o[d] += w * st.o[int64_t{r} * dv + d];
        }
        const float inv = 1.0f / l;
        for (int d = 0; d < dv; ++d) o[d] *= inv;
      }
    }
  }
}

// Brings layer il's block bounds up to date (attention.h SparseSummaries):
// blocks holding positions from pos0 on are recomputed, up to the last
// complete one.
Status UpdateSummaries(const AttentionShape& sh, kv::KvCache& cache, int il, int64_t pos0,
                       int64_t n_tokens, SparseSummaries& sum) {
  const int dk = sh.head_dim_k;
  const int64_t width = int64_t{sh.n_head_kv} * 2 * dk;
  sum.blocks = std::min(sum.blocks, pos0 / kSparseBlock);
  const int64_t complete = (pos0 + n_tokens) / kSparseBlock;
  if (sum.blocks >= complete) return OkStatus();
  sum.bounds.resize(static_cast<size_t>(complete * width));
  constexpr int64_t kPerCacheBlock = kBlockPositions / kSparseBlock;
  const size_t k_row_bytes = cache.k_row_bytes();
  std::vector<kv::KvCache::BlockView> views;
  std::vector<float> kbuf(static_cast<size_t>(kSparseBlock) * dk);
  int64_t b = sum.blocks;
  while (b < complete) {
    const int64_t cb0 = b / kPerCacheBlock;
    const int64_t cb1 = std::min((complete - 1) / kPerCacheBlock + 1, cb0 + kv::kMaxChunkBlocks);
    ELLM_RETURN_IF_ERROR(cache.Acquire(il, cb0, cb1, &views));
    for (const int64_t end = std::min(complete, cb1 * kPerCacheBlock); b < end; ++b) {
      const kv::KvCache::BlockView& view = views[static_cast<size_t>(b / kPerCacheBlock - cb0)];
      const int64_t row0 = b * kSparseBlock - view.first_pos;
      for (int kvh = 0; kvh < sh.n_head_kv; ++kvh) {
        const float* k = ToF32(cache.type(), view.slices[kvh] + row0 * k_row_bytes, kSparseBlock,
                               dk, k_row_bytes, kbuf.data(), dk);
        float* mx = sum.bounds.data() + (b * sh.n_head_kv + kvh) * 2 * dk;
        float* mn = mx + dk;
        std::copy(k, k + dk, mx);
        std::copy(k, k + dk, mn);
        for (int j = 1; j < kSparseBlock; ++j) {
          for (int d = 0; d < dk; ++d) {
            mx[d] = std::max(mx[d], k[j * dk + d]);
            mn[d] = std::min(mn[d], k[j * dk + d]);
          }
        }
      }
    }
  }
  sum.blocks = complete;
  return OkStatus();
}

// Sparse attention's choice: keep[(kvh * n_tiles + tile) * n_key_tiles + j]
// says whether that row tile reads key tile j. The sink, the local window
// (from local_tokens before the tile's first row) and the top_k middle
// tiles by bound are kept: a tile's bound is the most any of the row tile's
// queries q can score against it, sum_d max(q_d max_d, q_d min_d), computed
// as one product of [q+, q-] rows with [max, min] rows.
void SelectKeyTiles(const Plan& plan, const float* q, const SparseSummaries& sum,
                    int64_t n_key_tiles, std::vector<uint8_t>& keep, ThreadPool& pool) {
  const AttentionShape& sh = plan.shape;
  const int dk = sh.head_dim_k;
  const int64_t base_tasks = int64_t{sh.n_head_kv} * plan.n_tiles;
  keep.assign(static_cast<size_t>(base_tasks * n_key_tiles), 1);
  const int64_t sink_tiles = (int64_t{sh.sparse.sink_tokens} + kKeyTile - 1) / kKeyTile;
  const int64_t top_k = sh.sparse.top_k_blocks;
  const int64_t q_row = int64_t{sh.n_head} * dk;
  pool.ParallelFor(base_tasks, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> qq, ub, best;
    thread_local std::vector<int64_t> order;
    for (int64_t bt = begin; bt < end; ++bt) {
      const int kvh = static_cast<int>(bt / plan.n_tiles);
      const int64_t t0 = (bt % plan.n_tiles) * plan.tile_tokens;
      const int64_t t1 = std::min(plan.n_tokens, t0 + plan.tile_tokens);
      const int64_t local_first =
          std::max<int64_t>(0, plan.pos0 + t0 - sh.sparse.local_tokens) / kKeyTile;
      const int64_t m0 = std::min(sink_tiles, local_first), m1 = local_first;
      const int64_t n_mid = m1 - m0;
      if (n_mid <= top_k) continue;
      const int rows = static_cast<int>((t1 - t0) * plan.group);
      qq.resize(static_cast<size_t>(rows) * 2 * dk);
      for (int r = 0; r < rows; ++r) {
        const float* src =
            q + (t0 + r / plan.group) * q_row + int64_t{kvh * plan.group + r % plan.group} * dk;
        float* dst = qq.data() + int64_t{r} * 2 * dk;
        for (int d = 0; d < dk; ++d) {
          dst[d] = std::max(src[d], 0.0f);
          dst[dk + d] = std::min(src[d], 0.0f);
        }
      }
      ub.resize(static_cast<size_t>(rows * n_mid));
      kernels::GetAttnTile().scores(rows, static_cast<int>(n_mid), 2 * dk, qq.data(), 2 * dk,
                                    sum.bounds.data() + (m0 * sh.n_head_kv + kvh) * 2 * dk,
                                    int64_t{sh.n_head_kv} * 2 * dk, ub.data(), n_mid);
      best.assign(ub.begin(), ub.begin() + n_mid);
      for (int r = 1; r < rows; ++r) {
        const float* u = ub.data() + r * n_mid;
        for (int64_t m = 0; m < n_mid; ++m) best[m] = std::max(best[m], u[m]);
      }
      order.resize(static_cast<size_t>(n_mid));
      for (int64_t m = 0; m < n_mid; ++m) order[m] = m;
      std::nth_element(
          order.begin(), order.begin() + top_k, order.end(),
          [&](int64_t a, int64_t b) { return best[a] > best[b] || (best[a] == best[b] && a < b); });
      uint8_t* kp = keep.data() + bt * n_key_tiles;
      std::fill(kp + m0, kp + m1, uint8_t{0});
      for (int64_t i = 0; i < top_k; ++i) kp[m0 + order[i]] = 1;
    }
  });
}

// True when placement steers: one valid range per KV head, not all of
// them the whole pool (one node, or kOff, keeps dynamic claiming).
bool Steers(const AttentionPlacement& placement, int n_head_kv, int threads) {
  if (static_cast<int>(placement.kv_head_threads.size()) != n_head_kv) return false;
  bool narrower = false;
  for (const ThreadRange& r : placement.kv_head_threads) {
    if (r.begin < 0 || r.end > threads || r.size() < 1) return false;
    narrower |= r.size() < threads;
  }
  return narrower;
}

}  // namespace

AttentionPlacement PlacementForLayer(const NumaPlan& plan, int il) {
  AttentionPlacement p;
  if (plan.nodes.size() < 2) return p;
  for (int h = 0; h < plan.n_kv_head; ++h) p.kv_head_threads.push_back(plan.KvHeadThreads(il, h));
  return p;
}

namespace {

// One call's plan and state between its preparation and its Finish.
struct Prepared {
  const AttentionCall* call;
  Plan plan;
  const float* qr;  // the queries, rounded to K's precision where K is 16-bit
  bool sparse;
  int64_t n_key_tiles;
  int64_t base_tasks, tasks;
  int64_t k_first, k_last, b_first, b_last;
  std::vector<kv::KvCache::BlockView> views;
  // keep row of a task (sparse), else nullptr.
  const uint8_t* KeepOf(int64_t task) const {
    return sparse ? call->scratch->keep.data() + (task / plan.splits) * n_key_tiles : nullptr;
  }
  // Whether any row tile reads a key in blocks [c0, c1): a chunk none
  // reads is not acquired (nor read back when spilled).
  bool ChunkRead(int64_t c0, int64_t c1) const {
    if (!sparse) return true;
    const int64_t j0 = c0 * kBlockPositions / kKeyTile;
    const int64_t j1 = std::min(n_key_tiles, c1 * kBlockPositions / kKeyTile);
    for (int64_t bt = 0; bt < base_tasks; ++bt) {
      const uint8_t* kp = call->scratch->keep.data() + bt * n_key_tiles;
      if (std::find(kp + j0, kp + j1, uint8_t{1}) != kp + j1) return true;
    }
    return false;
  }
};

// The plan, the cleared running state, the rounded queries and (sparse)
// the key tiles each row tile reads.
Status Prepare(const AttentionCall& c, int il, ThreadPool& pool, Prepared& p) {
  const AttentionShape& shape = c.shape;
  AttentionScratch& scratch = *c.scratch;
  p.call = &c;
  Plan& plan = p.plan;
  plan = Plan{};
  plan.shape = shape;
  plan.type = c.cache->type();
  plan.group = shape.n_head / shape.n_head_kv;
  const int tile_rows = shape.window > 0 ? kRowsPerTileWindowed : kRowsPerTileFull;
  // A call of fewer tokens than a tile (decode) gets a tile of its size:
  // the same tasks, and running state for its rows only (a full tile's,
  // cleared per call, was 512 KiB at Gemma 3's global layers).
  plan.tile_tokens =
      static_cast<int>(std::clamp<int64_t>(c.n_tokens, 1, std::max(1, tile_rows / plan.group)));
  plan.n_tiles = (c.n_tokens + plan.tile_tokens - 1) / plan.tile_tokens;
  plan.n_tokens = c.n_tokens;
  plan.pos0 = c.pos0;
  p.k_first = plan.Lo(c.pos0);
  p.k_last = c.pos0 + c.n_tokens - 1;
  p.base_tasks = shape.n_head_kv * plan.n_tiles;
  // One split per thread (at most kMaxSplits) in every call, batched or
  // not: a row's keys are always folded in the same groups and merged in
  // the same order, so prefill and one-token decode agree bit for bit.
  plan.splits = std::clamp(pool.size(), 1, kMaxSplits);
  const int rows = plan.tile_tokens * plan.group;
  plan.state_stride = int64_t{rows} * (2 + shape.head_dim_v);
  p.tasks = p.base_tasks * plan.splits;
  scratch.state.resize(static_cast<size_t>(p.tasks * plan.state_stride));
  for (int64_t t = 0; t < p.tasks; ++t) {
    TaskState st = StateOf(plan, scratch.state, t);
    std::fill(st.m, st.m + rows, kNegInf);
    std::fill(st.l, st.l + rows, 0.0f);
    std::fill(st.o, st.o + int64_t{rows} * shape.head_dim_v, 0.0f);
  }
  // Q rounded to the precision K is stored in, as llama.cpp rounds Q to K's
  // type before the product (q8_0 keys are dequantized instead; Q stays
  // f32); once per call, not once per task and chunk.
  p.qr = c.q;
  if (plan.type == KvType::kF16 || plan.type == KvType::kBF16) {
    const int64_t q_row = int64_t{shape.n_head} * shape.head_dim_k;
    scratch.q.resize(static_cast<size_t>(c.n_tokens * q_row));
    const kernels::ActivationKernels& ak = kernels::GetActivationKernels();
    const auto round = plan.type == KvType::kF16 ? ak.round_f16 : ak.round_bf16;
    pool.ParallelFor(c.n_tokens, 1, [&](int64_t begin, int64_t end) {
      round(c.q + begin * q_row, scratch.q.data() + begin * q_row, (end - begin) * q_row);
    });
    p.qr = scratch.q.data();
  }
  // Sparse: which key tiles each row tile reads (none skipped while the
  // context is short).
  p.sparse = shape.window == 0 && shape.sparse.top_k_blocks > 0 && c.summaries != nullptr;
  p.n_key_tiles = p.k_last / kKeyTile + 1;
  if (p.sparse) {
    ELLM_RETURN_IF_ERROR(UpdateSummaries(shape, *c.cache, il, c.pos0, c.n_tokens, *c.summaries));
    SelectKeyTiles(plan, p.qr, *c.summaries, p.n_key_tiles, scratch.keep, pool);
  }
  p.b_first = p.k_first / kBlockPositions;
  p.b_last = p.k_last / kBlockPositions;
  return OkStatus();
}

// Keys [j_lo, j_hi] of blocks [c0, c1): the chunk's bounds within the call.
int64_t ChunkLo(const Prepared& p, int64_t c0) { return std::max(p.k_first, c0 * kBlockPositions); }
int64_t ChunkHi(const Prepared& p, int64_t c1) {
  return std::min(p.k_last, c1 * kBlockPositions - 1);
}

// One call on its own: a pool call per chunk, its tasks claimed by any
// thread, or dealt to each KV head's threads when the placement steers.
Status RunAlone(Prepared& p, int il, ThreadPool& pool) {
  const AttentionCall& c = *p.call;
  const AttentionPlacement& placement = *c.placement;
  const bool steer = Steers(placement, c.shape.n_head_kv, pool.size());
  const int64_t per_head = p.plan.n_tiles * p.plan.splits;
  for (int64_t c0 = p.b_first; c0 <= p.b_last; c0 += kv::kMaxChunkBlocks) {
    const int64_t c1 = std::min(p.b_last + 1, c0 + kv::kMaxChunkBlocks);
    if (!p.ChunkRead(c0, c1)) continue;
    ELLM_RETURN_IF_ERROR(c.cache->Acquire(il, c0, c1, &p.views));
    const int64_t j_lo = ChunkLo(p, c0), j_hi = ChunkHi(p, c1);
    if (!steer) {
      pool.ParallelFor(p.tasks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          RunTask(p.plan, *c.cache, p.views, p.qr, task, j_lo, j_hi, c.scratch->state,
                  p.KeepOf(task));
        }
      });
      continue;
    }
    // Static: every thread must take part, but only the threads of a head's
    // node touch its slices.
    pool.Run([&](int thread, int) {
      for (int kvh = 0; kvh < c.shape.n_head_kv; ++kvh) {
        const ThreadRange r = placement.kv_head_threads[kvh];
        if (!r.Contains(thread)) continue;
        for (int64_t i = thread - r.begin; i < per_head; i += r.size()) {
          if (placement.on_task) placement.on_task(thread, kvh);
          const int64_t task = kvh * per_head + i;
          RunTask(p.plan, *c.cache, p.views, p.qr, task, j_lo, j_hi, c.scratch->state,
                  p.KeepOf(task));
        }
      }
    });
  }
  return OkStatus();
}

// Several calls together: in round r every call acquires its r-th chunk
// and all their tasks share one pool call, so batched decode's sessions
// cost one hand-off per round instead of one per session (each task's
// arithmetic is unchanged).
Status RunTogether(std::vector<Prepared>& ps, int il, ThreadPool& pool) {
  struct Part {
    Prepared* p;
    int64_t first_task;  // its tasks' first index in the round
    int64_t j_lo, j_hi;
  };
  std::vector<Part> parts;
  for (int64_t round = 0;; ++round) {
    parts.clear();
    int64_t total = 0;
    bool more = false;
    for (Prepared& p : ps) {
      const int64_t c0 = p.b_first + round * kv::kMaxChunkBlocks;
      if (c0 > p.b_last) continue;
      more = true;
      const int64_t c1 = std::min(p.b_last + 1, c0 + kv::kMaxChunkBlocks);
      if (!p.ChunkRead(c0, c1)) continue;
      ELLM_RETURN_IF_ERROR(p.call->cache->Acquire(il, c0, c1, &p.views));
      parts.push_back({&p, total, ChunkLo(p, c0), ChunkHi(p, c1)});
      total += p.tasks;
    }
    if (!more) return OkStatus();
    pool.ParallelFor(total, 1, [&](int64_t begin, int64_t end) {
      auto part = std::upper_bound(parts.begin(), parts.end(), begin,
                                   [](int64_t i, const Part& x) { return i < x.first_task; });
      --part;
      for (int64_t i = begin; i < end; ++i) {
        while (part + 1 != parts.end() && i >= (part + 1)->first_task) ++part;
        Prepared& p = *part->p;
        const int64_t task = i - part->first_task;
        RunTask(p.plan, *p.call->cache, p.views, p.qr, task, part->j_lo, part->j_hi,
                p.call->scratch->state, p.KeepOf(task));
      }
    });
  }
}

}  // namespace

Status AttentionBatch(std::span<const AttentionCall> calls, int il, ThreadPool& pool) {
  thread_local std::vector<Prepared> ps;
  // Together only when no call steers (NUMA placement deals its tasks
  // statically) and no two share a cache or scratch.
  bool together = calls.size() > 1;
  for (size_t i = 0; i < calls.size() && together; ++i) {
    const AttentionCall& c = calls[i];
    together = !Steers(*c.placement, c.shape.n_head_kv, pool.size()) &&
               std::none_of(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(i),
                            [&](const AttentionCall& o) {
                              return o.cache == c.cache || o.scratch == c.scratch;
                            });
  }
  if (!together) {
    ps.resize(1);
    for (const AttentionCall& c : calls) {
      ELLM_RETURN_IF_ERROR(Prepare(c, il, pool, ps[0]));
      ELLM_RETURN_IF_ERROR(RunAlone(ps[0], il, pool));
      Finish(ps[0].plan, c.scratch->state, c.out);
    }
    return OkStatus();
  }
  ps.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i)
    ELLM_RETURN_IF_ERROR(Prepare(calls[i], il, pool, ps[i]));
  ELLM_RETURN_IF_ERROR(RunTogether(ps, il, pool));
  for (Prepared& p : ps) Finish(p.plan, p.call->scratch->state, p.call->out);
  return OkStatus();
}

Status Attention(const AttentionShape& shape, kv::KvCache& cache, int il, const float* q,
                 int64_t n_tokens, int64_t pos0, float* out, ThreadPool& pool,
                 AttentionScratch& scratch, const AttentionPlacement& placement,
                 SparseSummaries* summaries) {
  const AttentionCall call{shape, &cache, q, n_tokens, pos0, out, &scratch, &placement, summaries};
  return AttentionBatch({&call, 1}, il, pool);
}

}  // namespace ellm::model

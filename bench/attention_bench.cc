// Attention alone (model/attention.cc) over a KV cache filled to a depth:
// one-token decode and one prefill micro-batch at the end of that depth, in
// the shapes of Gemma 3 270M's full-attention layers (4 query heads, 1 KV
// head, head size 256; 3 such layers) and Llama 3.2 1B's (32 / 8, head size
// 64; 16 layers). One iteration runs every layer in turn, as a model step
// does, so at depth the K/V come from DRAM, not from a cache they would fit
// in alone (one Gemma layer at 32K is 32 MiB of f16 K/V).
// Counters: the multiply-adds of Q.K and P.V per second (GMAC/s), to put
// beside the f32 FMA peak (2 x 8 or 16 lanes per cycle per core), and the
// K/V bytes read per second (GB/s), to put beside the memory bandwidth.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/thread_pool.h"
#include "kernels/attn_tile.h"
#include "kv/kv_cache.h"
#include "model/attention.h"
#include "quant/fp16.h"

namespace {

bool HasAmxBf16() {
  return ellm::HostCpu().Level() >= ellm::IsaLevel::kAmx && ellm::HostCpu().amx_bf16;
}

struct Shape {
  int n_head, n_kv, dim, layers;
};
constexpr Shape kShapes[] = {{4, 1, 256, 3}, {32, 8, 64, 16}};

constexpr ellm::KvType kTypes[] = {ellm::KvType::kBF16, ellm::KvType::kF16, ellm::KvType::kQ8_0};

std::unique_ptr<ellm::kv::KvCache> FilledCache(const Shape& s, int64_t depth, ellm::KvType type) {
  ellm::kv::KvCacheOptions o;
  o.n_head_kv = s.n_kv;
  o.head_dim_k = o.head_dim_v = s.dim;
  o.windows.assign(static_cast<size_t>(s.layers), 0);
  o.n_ctx = depth;
  o.micro_batch = 512;
  o.type = type;
  auto cache = ellm::kv::KvCache::Create(o);
  if (!cache.ok()) return nullptr;
  // Rows are windows into one pool of normal values (a fresh draw per row
  // would take longer than the benchmark at 16 layers x 32K).
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  const size_t row = static_cast<size_t>(s.n_kv) * s.dim;
  std::vector<float> pool(65536 + 2 * row);
  for (float& x : pool) x = nd(rng);
  std::uniform_int_distribution<size_t> at(0, 65535);
  for (int il = 0; il < s.layers; ++il) {
    for (int64_t p = 0; p < depth; ++p) {
      if (!(*cache)->Store(il, p, pool.data() + at(rng), pool.data() + row + at(rng)).ok()) {
        return nullptr;
      }
    }
  }
  return std::move(*cache);
}

// range(0): shape index; range(1): depth; range(2): query tokens (1 = decode);
// range(3): threads; range(4): KV type index in kTypes (0 bf16, 1 f16, 2 q8_0;
// 3 bf16 with the opt-in bf16 weights; 4 bf16 with f32 scores, keys widened:
// AttnScores::kF32, where 0 and 3 use pair dot products; 5 bf16 on AMX
// tiles, AttnScores::kTiles, where the CPU has AMX-BF16).
void BM_Attention(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t depth = state.range(1), n = state.range(2);
  const bool bf16_weights = state.range(4) == 3, f32_scores = state.range(4) == 4;
  const bool tiles = state.range(4) == 5;
  if (tiles && !HasAmxBf16()) {
    state.SkipWithError("no AMX-BF16 here (tiles would run the scalar references)");
    return;
  }
  auto cache =
      FilledCache(s, depth, state.range(4) >= 3 ? ellm::KvType::kBF16 : kTypes[state.range(4)]);
  if (cache == nullptr) {
    state.SkipWithError("cannot build the KV cache");
    return;
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 0.3f);
  std::vector<float> q(static_cast<size_t>(n) * s.n_head * s.dim), out(q.size());
  for (float& x : q) x = nd(rng);
  ellm::ThreadPool pool({.threads = static_cast<int>(state.range(3))});
  ellm::model::AttentionScratch scratch;
  const int64_t pos0 = depth - n;
  ellm::model::AttentionShape shape{s.n_head, s.n_kv, s.dim, s.dim, 0, bf16_weights};
  shape.bf16_pair_scores = !f32_scores;
  shape.bf16_tiles = tiles;
  for (auto _ : state) {
    for (int il = 0; il < s.layers; ++il) {
      auto st =
          ellm::model::Attention(shape, *cache, il, q.data(), n, pos0, out.data(), pool, scratch);
      if (!st.ok()) state.SkipWithError("attention failed");
    }
    benchmark::DoNotOptimize(out.data());
  }
  // Keys seen per query token (causal), times both products, per layer.
  double keys = 0;
  for (int64_t t = 0; t < n; ++t) keys += static_cast<double>(pos0 + t + 1);
  const double macs = keys * s.n_head * 2.0 * s.dim * s.layers;
  state.counters["GMAC/s"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double kv_bytes = static_cast<double>((*cache).k_row_bytes() + (*cache).v_row_bytes()) *
                          static_cast<double>(depth) * s.n_kv * s.layers;
  state.counters["GB/s"] =
      benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Attention)
    ->ArgNames({"shape", "depth", "tokens", "threads", "kv"})
    ->ArgsProduct({{0, 1}, {4096, 32768}, {1, 256}, {1, 2}, {0, 1, 2, 3, 4, 5}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

namespace {

// The two tile products alone, on data that stays in cache: their ceiling
// without the memory system. range(0): head size; range(1): 0 Scores,
// 1 Accumulate; range(2): query rows (a prefill task's 256 = 64 tokens x 4
// query heads, a decode task's 4); range(3): 0 an f32 tile (what prefill
// converts to), 1 f16 rows widened as read (what decode reads), 2 bf16 rows
// (Scores: bf16 pair dot products, prefill and decode; Accumulate: widened
// as read, decode), 3 bf16 weights and V pairs (AccumulateBf16Pairs, after
// InterleaveBf16Pairs, which is timed too), 4 AMX tiles (ScoresBf16Tiles;
// InterleaveBf16Pairs and AccumulateBf16Tiles), where the CPU has AMX-BF16.
// 64 keys.
// Counter GMAC/s, beside the f32 FMA peak.
void BM_AttnTile(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0)), rows = static_cast<int>(state.range(2));
  const int keys = 64;
  const bool half = state.range(3) == 1, bf16 = state.range(3) == 2, pairs = state.range(3) == 3;
  const bool tiles = state.range(3) == 4;
  if (tiles && !HasAmxBf16()) {
    state.SkipWithError("no AMX-BF16 here (tiles would run the scalar references)");
    return;
  }
  const ellm::kernels::AttnTileKernels& k = ellm::kernels::GetAttnTile();
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 0.3f);
  std::vector<float> q(static_cast<size_t>(rows) * dim), kv(static_cast<size_t>(keys) * (dim + 16));
  std::vector<uint16_t> kv16(kv.size()), kvb(kv.size());
  std::vector<uint32_t> vp(static_cast<size_t>(keys / 2) * dim);
  std::vector<float> s(static_cast<size_t>(rows) * keys), o(static_cast<size_t>(rows) * dim);
  for (float& x : q) x = nd(rng);
  for (size_t i = 0; i < kv.size(); ++i) {
    kv[i] = nd(rng);
    kv16[i] = _cvtss_sh(kv[i], 0);
    kvb[i] = ellm::quant::Fp32ToBf16(kv[i]);
  }
  if (bf16 || pairs || tiles) {
    for (float& x : q) x = ellm::quant::Bf16ToFp32(ellm::quant::Fp32ToBf16(x));
  }
  for (float& x : s) x = std::abs(nd(rng));
  for (auto _ : state) {
    if (state.range(1) == 0) {
      if (tiles) {
        k.scores_bf16_tiles(rows, keys, dim, q.data(), dim, kvb.data(), dim, s.data(), keys,
                            nullptr, 0);
      } else if (bf16) {
        k.scores_bf16(rows, keys, dim, q.data(), dim, kvb.data(), dim, s.data(), keys, nullptr, 0);
      } else if (half) {
        k.scores_f16(rows, keys, dim, q.data(), dim, kv16.data(), dim, s.data(), keys, nullptr, 0);
      } else {
        k.scores(rows, keys, dim, q.data(), dim, kv.data(), dim, s.data(), keys);
      }
      benchmark::DoNotOptimize(s.data());
    } else {
      if (pairs || tiles) {
        k.interleave_bf16_pairs(keys, dim, kvb.data(), dim, vp.data(), nullptr, 0);
        if (tiles) {
          k.accumulate_bf16_tiles(rows, keys, dim, s.data(), keys, vp.data(), o.data(), dim);
        } else {
          k.accumulate_bf16_pairs(rows, keys, dim, s.data(), keys, vp.data(), o.data(), dim);
        }
      } else if (bf16) {
        k.accumulate_bf16(rows, keys, dim, s.data(), keys, kvb.data(), dim, o.data(), dim, nullptr,
                          0);
      } else if (half) {
        k.accumulate_f16(rows, keys, dim, s.data(), keys, kv16.data(), dim, o.data(), dim, nullptr,
                         0);
      } else {
        k.accumulate(rows, keys, dim, s.data(), keys, kv.data(), dim + 16, o.data(), dim);
      }
      benchmark::DoNotOptimize(o.data());
    }
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(rows) * keys * dim * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttnTile)
    ->ArgNames({"dim", "op", "rows", "half"})
    ->ArgsProduct({{64, 256}, {0, 1}, {256}, {0}})
    ->ArgsProduct({{64, 256}, {0, 1}, {4}, {1}})
    ->ArgsProduct({{64, 256}, {0}, {256, 4}, {2}})
    ->ArgsProduct({{64, 256}, {1}, {4}, {2}})
    ->ArgsProduct({{64, 256}, {1}, {256, 4}, {3}})
    ->ArgsProduct({{64, 256}, {0, 1}, {256, 4}, {4}});

}  // namespace

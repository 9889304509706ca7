// Sparse (approximate) attention: which key tiles a query reads, checked
// against a reference that chooses them by the definition (attention.h
// SparseSummaries, engine.h SparseAttentionOptions).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "ellm/engine/thread_pool.h"
#include "model/attention.h"

namespace ellm::model {
namespace {

constexpr int kTile = kSparseBlock;

struct Data {
  int n_head, n_kv, dk, dv;
  int64_t n_ctx;
  std::vector<float> k, v, q;  // [pos][n_kv][dk], [pos][n_kv][dv], [pos][n_head][dk]
};

Data Random(int n_head, int n_kv, int dk, int dv, int64_t n_ctx, uint32_t seed) {
  Data d{n_head, n_kv, dk, dv, n_ctx, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  d.k.resize(n_ctx * n_kv * dk);
  d.v.resize(n_ctx * n_kv * dv);
  d.q.resize(n_ctx * n_head * dk);
  for (float& x : d.k) x = nd(rng);
  for (float& x : d.v) x = nd(rng);
  for (float& x : d.q) x = nd(rng) * 0.5f;
  return d;
}

std::unique_ptr<kv::KvCache> Cache(const Data& d, int64_t micro) {
  kv::KvCacheOptions ko;
  ko.n_head_kv = d.n_kv;
  ko.head_dim_k = d.dk;
  ko.head_dim_v = d.dv;
  ko.windows = {0};
  ko.n_ctx = d.n_ctx;
  ko.micro_batch = micro;
  ko.type = KvType::kF32;
  auto made = kv::KvCache::Create(ko);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(*made) : nullptr;
}

// Runs positions [from, to) through layer 0 in micro-batches; out is
// [pos][n_head][dv].
void RunLayer(const Data& d, kv::KvCache& cache, const SparseAttentionOptions& sp, int64_t micro,
              int64_t from, int64_t to, SparseSummaries* sum, std::vector<float>& out) {
  ThreadPool pool({.threads = 2});
  AttentionScratch scratch;
  out.resize(d.n_ctx * d.n_head * d.dv);
  for (int64_t pos0 = from; pos0 < to; pos0 += micro) {
    const int64_t n = std::min(micro, to - pos0);
    for (int64_t t = pos0; t < pos0 + n; ++t) {
      ASSERT_TRUE(cache.Store(0, t, &d.k[t * d.n_kv * d.dk], &d.v[t * d.n_kv * d.dv]).ok());
    }
    AttentionShape shape{d.n_head, d.n_kv, d.dk, d.dv, 0, false, sp};
    ASSERT_TRUE(Attention(shape, cache, 0, &d.q[pos0 * d.n_head * d.dk], n, pos0,
                          &out[pos0 * d.n_head * d.dv], pool, scratch, {}, sum)
                    .ok());
  }
}

// One token's rows (its group of query heads for KV head kvh) by the
// definition: the tiles kept are the sink, the window from local_tokens
// before the token, and the top_k tiles between by the largest bound any of
// the group's queries reaches; then softmax attention over exactly those
// keys, in double.
std::vector<double> Reference(const Data& d, const SparseAttentionOptions& sp, int64_t p, int kvh) {
  const int group = d.n_head / d.n_kv;
  const int64_t local_first = std::max<int64_t>(0, p - sp.local_tokens) / kTile;
  const int64_t m0 = std::min<int64_t>((sp.sink_tokens + kTile - 1) / kTile, local_first);
  std::set<int64_t> tiles;
  for (int64_t j = 0; j <= p / kTile; ++j) {
    if (j < m0 || j >= local_first) tiles.insert(j);
  }
  std::vector<std::pair<double, int64_t>> bound;
  for (int64_t j = m0; j < local_first; ++j) {
    double best = -1e300;
    for (int g = 0; g < group; ++g) {
      const float* q = &d.q[(p * d.n_head + kvh * group + g) * d.dk];
      double ub = 0;
      for (int c = 0; c < d.dk; ++c) {
        double mx = -1e300, mn = 1e300;
        for (int64_t i = j * kTile; i < (j + 1) * kTile; ++i) {
          mx = std::max<double>(mx, d.k[(i * d.n_kv + kvh) * d.dk + c]);
          mn = std::min<double>(mn, d.k[(i * d.n_kv + kvh) * d.dk + c]);
        }
        ub += std::max(q[c] * mx, q[c] * mn);
      }
      best = std::max(best, ub);
    }
    bound.push_back({-best, j});
  }
  std::sort(bound.begin(), bound.end());
  for (size_t i = 0; i < bound.size() && i < static_cast<size_t>(sp.top_k_blocks); ++i) {
    tiles.insert(bound[i].second);
  }
  std::vector<double> out;
  for (int g = 0; g < group; ++g) {
    const float* q = &d.q[(p * d.n_head + kvh * group + g) * d.dk];
    std::vector<std::pair<double, int64_t>> s;
    double m = -1e300;
    for (int64_t j : tiles) {
      for (int64_t i = j * kTile; i < std::min((j + 1) * kTile, p + 1); ++i) {
        double x = 0;
        for (int c = 0; c < d.dk; ++c) x += double(q[c]) * d.k[(i * d.n_kv + kvh) * d.dk + c];
        s.push_back({x, i});
        m = std::max(m, x);
      }
    }
    double sum = 0;
    std::vector<double> o(d.dv, 0.0);
    for (auto& [x, i] : s) {
      const double w = std::exp(x - m);
      sum += w;
      for (int c = 0; c < d.dv; ++c) o[c] += w * d.v[(i * d.n_kv + kvh) * d.dv + c];
    }
    for (double& x : o) out.push_back(x / sum);
  }
  return out;
}

// Decoding token by token (each token its own row tile): every output is
// attention over exactly the tiles the definition keeps; and it is not
// dense attention (tiles were skipped).
TEST(SparseAttention, DecodeReadsTheSinkTheWindowAndTheTopKTilesByBound) {
  const Data d = Random(4, 2, 32, 48, 1400, 3);
  const SparseAttentionOptions sp{.top_k_blocks = 3, .sink_tokens = 70, .local_tokens = 200};
  auto cache = Cache(d, 1);
  ASSERT_NE(cache, nullptr);
  SparseSummaries sum;
  std::vector<float> out;
  RunLayer(d, *cache, sp, 1, 0, d.n_ctx, &sum, out);
  EXPECT_EQ(sum.blocks, d.n_ctx / kTile);
  auto dense_cache = Cache(d, 1);
  std::vector<float> dense;
  RunLayer(d, *dense_cache, {}, 1, 0, d.n_ctx, nullptr, dense);
  double most_from_dense = 0;
  for (int64_t p = 0; p < d.n_ctx; p += 7) {
    for (int kvh = 0; kvh < d.n_kv; ++kvh) {
      const std::vector<double> want = Reference(d, sp, p, kvh);
      const int group = d.n_head / d.n_kv;
      for (int g = 0; g < group; ++g) {
        for (int c = 0; c < d.dv; ++c) {
          const size_t at = (p * d.n_head + kvh * group + g) * d.dv + c;
          ASSERT_NEAR(out[at], want[g * d.dv + c], 1e-4) << "pos " << p << " kv head " << kvh;
          most_from_dense = std::max<double>(most_from_dense, std::fabs(out[at] - dense[at]));
        }
      }
    }
  }
  EXPECT_GT(most_from_dense, 1e-2);
}

// While the tiles between sink and window are no more than top_k, nothing
// is skipped: the same bits as dense attention, batched or not.
TEST(SparseAttention, ExactWhileTheMiddleFitsTopK) {
  const Data d = Random(4, 1, 64, 64, 1100, 5);
  const SparseAttentionOptions sp{.top_k_blocks = 12, .sink_tokens = 64, .local_tokens = 300};
  for (int64_t micro : {int64_t{1}, int64_t{96}}) {
    auto cache = Cache(d, micro), dense_cache = Cache(d, micro);
    SparseSummaries sum;
    std::vector<float> out, dense;
    RunLayer(d, *cache, sp, micro, 0, d.n_ctx, &sum, out);
    RunLayer(d, *dense_cache, {}, micro, 0, d.n_ctx, nullptr, dense);
    ASSERT_EQ(out, dense) << "micro-batch " << micro;
  }
}

// A rewound cache (positions rewritten with other keys) gets its bounds
// recomputed: the same results as a cache that only ever held the new keys.
TEST(SparseAttention, RewrittenPositionsGetNewBounds) {
  Data d = Random(2, 1, 32, 32, 1200, 9);
  const SparseAttentionOptions sp{.top_k_blocks = 2, .sink_tokens = 64, .local_tokens = 128};
  const int64_t micro = 100;
  auto cache = Cache(d, micro);
  SparseSummaries sum;
  std::vector<float> first, out, fresh_out;
  RunLayer(d, *cache, sp, micro, 0, d.n_ctx, &sum, first);
  // Positions from 500 on change; their keys now favour the last tiles.
  Data e = Random(2, 1, 32, 32, 1200, 10);
  std::copy(d.k.begin(), d.k.begin() + 500 * d.dk, e.k.begin());
  std::copy(d.v.begin(), d.v.begin() + 500 * d.dv, e.v.begin());
  std::copy(d.q.begin(), d.q.begin() + 500 * d.n_head * d.dk, e.q.begin());
  RunLayer(e, *cache, sp, micro, 500, e.n_ctx, &sum, out);
  auto fresh = Cache(e, micro);
  SparseSummaries fresh_sum;
  RunLayer(e, *fresh, sp, micro, 0, e.n_ctx, &fresh_sum, fresh_out);
  ASSERT_EQ(sum.blocks, fresh_sum.blocks);
  EXPECT_EQ(sum.bounds, fresh_sum.bounds);
  for (size_t i = 500 * d.n_head * d.dv; i < out.size(); ++i) ASSERT_EQ(out[i], fresh_out[i]) << i;
}

}  // namespace
}  // namespace ellm::model

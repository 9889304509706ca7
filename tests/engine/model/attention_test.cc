#include "model/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ellm/engine/thread_pool.h"

namespace ellm::model {
namespace {

// Naive softmax attention for one query head, as the definition says.
std::vector<float> Naive(const float* q, const std::vector<std::vector<float>>& keys,
                         const std::vector<std::vector<float>>& vals, int64_t lo, int64_t hi,
                         int dk, int dv) {
  std::vector<double> s;
  double m = -1e300;
  for (int64_t j = lo; j <= hi; ++j) {
    double d = 0;
    for (int i = 0; i < dk; ++i) d += double(q[i]) * keys[j][i];
    s.push_back(d);
    m = std::max(m, d);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - m));
  std::vector<float> out(dv, 0.0f);
  for (int64_t j = lo; j <= hi; ++j) {
    for (int d = 0; d < dv; ++d) out[d] += static_cast<float>(s[j - lo] / sum * vals[j][d]);
  }
  return out;
}

// How a bf16 cache's products run, as AttentionShape says it.
void SetScores(AttnScores scores, AttentionShape* shape) {
  shape->bf16_pair_scores = scores == AttnScores::kPairs;
  shape->bf16_tiles = scores == AttnScores::kTiles;
}

// (window, KV type, bf16 attention weights, a bf16 cache's scores)
class AttentionTest : public ::testing::TestWithParam<std::tuple<int, KvType, bool, AttnScores>> {};

// Ring-buffered sliding windows, grouped-query heads and several
// micro-batches, against the definition computed in double.
TEST_P(AttentionTest, MatchesNaiveSoftmaxWithWindowAndGqa) {
  const int window = std::get<0>(GetParam());
  const KvType type = std::get<1>(GetParam());
  const bool bf16_weights = std::get<2>(GetParam());
  const AttnScores scores = std::get<3>(GetParam());
  const int n_head = 4, n_kv = 2, dk = 32, dv = 64;
  // 700 positions wrap the two-block ring of the small windows.
  const int64_t n_ctx = 700, micro = 96;
  kv::KvCacheOptions ko;
  ko.n_head_kv = n_kv;
  ko.head_dim_k = dk;
  ko.head_dim_v = dv;
  ko.windows = {window};
  ko.n_ctx = n_ctx;
  ko.micro_batch = micro;
  ko.type = type;
  auto made = kv::KvCache::Create(ko);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  kv::KvCache& cache = **made;
  AttentionScratch scratch;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  std::vector<std::vector<float>> keys(n_ctx), vals(n_ctx);
  for (int64_t p = 0; p < n_ctx; ++p) {
    keys[p].resize(n_kv * dk);
    vals[p].resize(n_kv * dv);
    for (float& x : keys[p]) x = nd(rng);
    for (float& x : vals[p]) x = nd(rng);
  }
  ThreadPool pool({.threads = 2});
  // Feed positions in micro-batches like the forward pass does.
  for (int64_t pos0 = 0; pos0 < n_ctx; pos0 += micro) {
    const int64_t n = std::min(micro, n_ctx - pos0);
    for (int64_t t = 0; t < n; ++t)
      ASSERT_TRUE(cache.Store(0, pos0 + t, keys[pos0 + t].data(), vals[pos0 + t].data()).ok());
    std::vector<float> q(n * n_head * dk), out(n * n_head * dv);
    for (float& x : q) x = nd(rng) * 0.5f;
    AttentionShape shape{n_head, n_kv, dk, dv, window, bf16_weights};
    SetScores(scores, &shape);
    ASSERT_TRUE(Attention(shape, cache, 0, q.data(), n, pos0, out.data(), pool, scratch).ok());
    for (int64_t t = 0; t < n; ++t) {
      const int64_t p = pos0 + t;
      const int64_t lo = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
      for (int h = 0; h < n_head; ++h) {
        const int kvh = h / (n_head / n_kv);
        std::vector<std::vector<float>> kh(n_ctx), vh(n_ctx);
        for (int64_t j = lo; j <= p; ++j) {
          kh[j].assign(keys[j].begin() + kvh * dk, keys[j].begin() + (kvh + 1) * dk);
          vh[j].assign(vals[j].begin() + kvh * dv, vals[j].begin() + (kvh + 1) * dv);
        }
        auto want = Naive(q.data() + (t * n_head + h) * dk, kh, vh, lo, p, dk, dv);
        for (int d = 0; d < dv; ++d) {
          // Storage rounds K, V and Q: 2^-11 relative for f16, 2^-8 for
          // bf16, ~1/254 of each 32-block's largest value for q8_0.
          const double tol = type == KvType::kF32 ? 1e-4 : type == KvType::kF16 ? 2e-2 : 8e-2;
          ASSERT_NEAR(out[(t * n_head + h) * dv + d], want[d], tol) << "pos " << p << " head " << h;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    WindowsAndTypes, AttentionTest,
    ::testing::Combine(::testing::Values(0, 1, 37, 300),
                       ::testing::Values(KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kQ8_0),
                       ::testing::Values(false), ::testing::Values(AttnScores::kPairs)));
// The opt-in bf16 weights (2^-8 relative per weight): within bf16's
// tolerance; a bf16 cache's scores by widened keys (AttnScores::kF32); and
// both products on bf16 tiles (AttnScores::kTiles: AMX, or the reference
// kernels where the CPU has none).
INSTANTIATE_TEST_SUITE_P(Bf16WeightsAndScores, AttentionTest,
                         ::testing::Combine(::testing::Values(0, 1, 37, 300),
                                            ::testing::Values(KvType::kBF16), ::testing::Bool(),
                                            ::testing::Values(AttnScores::kPairs, AttnScores::kF32,
                                                              AttnScores::kTiles)));

}  // namespace
}  // namespace ellm::model

namespace ellm::model {
namespace {

// Decoding one token at a time gives exactly what a batched prefill gives,
// for f16 K/V (widened, then f32 products), bf16 (bf16 pair dot products
// for the scores, or widened keys) and bf16 with bf16 weights (pair dot
// products for both), and bf16 on tiles (key tiles starting anywhere in a
// chunk of 32). (KV type, bf16 weights, a bf16 cache's scores)
class OneTokenTest : public ::testing::TestWithParam<std::tuple<KvType, bool, AttnScores>> {};

TEST_P(OneTokenTest, OneTokenAtATimeEqualsBatched) {
  const int n_head = 4, n_kv = 1, dk = 64, dv = 64;
  // Tiles run the scalar references where the CPU has no AMX: fewer
  // positions (still seven key tiles, the window's bound moving through
  // them).
  const bool tiles = std::get<2>(GetParam()) == AttnScores::kTiles;
  const int64_t n_ctx = tiles ? 450 : 1500;
  const int window = tiles ? 100 : 300;  // and a sliding layer, whose lower bound moves
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> k(n_ctx * dk), v(n_ctx * dv), q(n_ctx * n_head * dk);
  for (float& x : k) x = nd(rng);
  for (float& x : v) x = nd(rng);
  for (float& x : q) x = nd(rng) * 0.3f;
  ThreadPool pool({.threads = 2});
  std::vector<std::vector<float>> outs;
  for (int64_t micro : {int64_t{256}, int64_t{1}, int64_t{77}}) {
    kv::KvCacheOptions ko;
    ko.n_head_kv = n_kv;
    ko.head_dim_k = dk;
    ko.head_dim_v = dv;
    ko.windows = {0, window};
    ko.n_ctx = n_ctx;
    ko.micro_batch = micro;
    ko.type = std::get<0>(GetParam());
    auto cache = kv::KvCache::Create(ko);
    ASSERT_TRUE(cache.ok());
    AttentionScratch scratch;
    std::vector<float> out(2 * n_ctx * n_head * dv);
    for (int64_t pos0 = 0; pos0 < n_ctx; pos0 += micro) {
      const int64_t n = std::min(micro, n_ctx - pos0);
      for (int il = 0; il < 2; ++il) {
        for (int64_t t = pos0; t < pos0 + n; ++t) {
          ASSERT_TRUE((*cache)->Store(il, t, &k[t * dk], &v[t * dv]).ok());
        }
        AttentionShape shape{n_head, n_kv, dk, dv, il == 0 ? 0 : window, std::get<1>(GetParam())};
        SetScores(std::get<2>(GetParam()), &shape);
        ASSERT_TRUE(Attention(shape, **cache, il, &q[pos0 * n_head * dk], n, pos0,
                              &out[(il * n_ctx + pos0) * n_head * dv], pool, scratch)
                        .ok());
      }
    }
    outs.push_back(out);
  }
  for (size_t i = 0; i < outs[0].size(); ++i) {
    ASSERT_EQ(outs[0][i], outs[1][i]) << i;
    ASSERT_EQ(outs[0][i], outs[2][i]) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, OneTokenTest,
                         ::testing::Values(std::tuple{KvType::kF16, false, AttnScores::kPairs},
                                           std::tuple{KvType::kBF16, false, AttnScores::kPairs},
                                           std::tuple{KvType::kBF16, false, AttnScores::kF32},
                                           std::tuple{KvType::kBF16, true, AttnScores::kPairs},
                                           std::tuple{KvType::kBF16, true, AttnScores::kF32},
                                           std::tuple{KvType::kBF16, false, AttnScores::kTiles}));

}  // namespace
}  // namespace ellm::model

namespace ellm::model {
namespace {

// Batched decode's sessions through AttentionBatch give each session the
// bits Attention gives it alone: sessions at different depths (one over
// three chunks of blocks, one empty taking three tokens), a full and a
// sliding layer, f16 and bf16 keys, one session sparse; and calls that
// share a cache (run one after another) too.
class AttentionBatchTest : public ::testing::TestWithParam<KvType> {};

TEST_P(AttentionBatchTest, SessionsTogetherEqualEachAlone) {
  const int n_head = 4, n_kv = 1, dk = 64, dv = 64;
  const int64_t n_ctx = 3000;
  const int window = 300;
  const std::vector<int64_t> depths = {2500, 700, 0};
  const std::vector<int64_t> tokens = {1, 1, 3};
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> k(n_ctx * dk), v(n_ctx * dv), q(8 * n_head * dk);
  for (float& x : k) x = nd(rng);
  for (float& x : v) x = nd(rng);
  for (float& x : q) x = nd(rng) * 0.3f;
  ThreadPool pool({.threads = 2});
  std::vector<std::unique_ptr<kv::KvCache>> caches;
  for (size_t i = 0; i < depths.size(); ++i) {
    kv::KvCacheOptions ko;
    ko.n_head_kv = n_kv;
    ko.head_dim_k = dk;
    ko.head_dim_v = dv;
    ko.windows = {0, window};
    ko.n_ctx = n_ctx;
    ko.micro_batch = 256;
    ko.type = GetParam();
    auto cache = kv::KvCache::Create(ko);
    ASSERT_TRUE(cache.ok());
    // Session i's keys start at row 100 * i, so the sessions differ.
    for (int64_t t = 0; t < depths[i] + tokens[i]; ++t) {
      const int64_t r = (t + 100 * static_cast<int64_t>(i)) % n_ctx;
      for (int il = 0; il < 2; ++il) {
        ASSERT_TRUE((*cache)->Store(il, t, &k[r * dk], &v[r * dv]).ok());
      }
    }
    caches.push_back(std::move(*cache));
  }
  SparseAttentionOptions sparse;
  sparse.top_k_blocks = 4;
  sparse.sink_tokens = 64;
  sparse.local_tokens = 256;
  std::vector<SparseSummaries> summaries(2);
  const AttentionPlacement none;
  for (int il = 0; il < 2; ++il) {
    std::vector<AttentionScratch> scratch(depths.size() + 1);
    std::vector<std::vector<float>> alone, together;
    std::vector<AttentionCall> calls;
    int64_t q_row = 0;
    for (size_t i = 0; i < depths.size(); ++i) {
      AttentionShape shape{n_head, n_kv, dk, dv, il == 0 ? 0 : window};
      if (i == 0) shape.sparse = sparse;
      alone.emplace_back(tokens[i] * n_head * dv, 0.0f);
      together.emplace_back(tokens[i] * n_head * dv, 0.0f);
      ASSERT_TRUE(Attention(shape, *caches[i], il, &q[q_row * n_head * dk], tokens[i], depths[i],
                            alone.back().data(), pool, scratch[i], none,
                            i == 0 ? &summaries[il] : nullptr)
                      .ok());
      calls.push_back({shape, caches[i].get(), &q[q_row * n_head * dk], tokens[i], depths[i],
                       together.back().data(), &scratch[i], &none,
                       i == 0 ? &summaries[il] : nullptr});
      q_row += tokens[i];
    }
    ASSERT_TRUE(AttentionBatch(calls, il, pool).ok());
    for (size_t i = 0; i < depths.size(); ++i) {
      ASSERT_EQ(alone[i], together[i]) << "session " << i << " layer " << il;
    }
    // Two calls on one cache (its last token, then its first of three):
    // one after another, each still as alone.
    std::vector<float> first(n_head * dv), second(n_head * dv);
    AttentionShape shape{n_head, n_kv, dk, dv, il == 0 ? 0 : window};
    const std::vector<AttentionCall> shared = {{shape, caches[2].get(), &q[6 * n_head * dk], 1, 2,
                                                first.data(), &scratch[2], &none, nullptr},
                                               {shape, caches[2].get(), &q[5 * n_head * dk], 1, 0,
                                                second.data(), &scratch[3], &none, nullptr}};
    ASSERT_TRUE(AttentionBatch(shared, il, pool).ok());
    std::vector<float> expect(n_head * dv);
    ASSERT_TRUE(
        Attention(shape, *caches[2], il, &q[6 * n_head * dk], 1, 2, expect.data(), pool, scratch[2])
            .ok());
    EXPECT_EQ(first, expect);
    ASSERT_TRUE(
        Attention(shape, *caches[2], il, &q[5 * n_head * dk], 1, 0, expect.data(), pool, scratch[2])
            .ok());
    EXPECT_EQ(second, expect);
  }
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, AttentionBatchTest,
                         ::testing::Values(KvType::kF16, KvType::kBF16));

}  // namespace
}  // namespace ellm::model

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

class AttentionTest : public ::testing::TestWithParam<std::tuple<int, KvType>> {};

// Ring-buffered sliding windows, grouped-query heads and several
// micro-batches, against the definition computed in double.
TEST_P(AttentionTest, MatchesNaiveSoftmaxWithWindowAndGqa) {
  const int window = std::get<0>(GetParam());
  const KvType type = std::get<1>(GetParam());
  const int n_head = 4, n_kv = 2, dk = 16, dv = 8;
  const int64_t n_ctx = 300, micro = 64;
  KvCache cache =
      KvCache::ForTest(1, n_kv * dk, n_kv * dv, n_ctx, window > 0 ? window + micro : n_ctx, type);
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
      cache.Store(0, pos0 + t, keys[pos0 + t].data(), vals[pos0 + t].data());
    std::vector<float> q(n * n_head * dk), out(n * n_head * dv);
    for (float& x : q) x = nd(rng) * 0.5f;
    AttentionShape shape{n_head, n_kv, dk, dv, window};
    Attention(shape, cache, 0, q.data(), n, pos0, out.data(), pool);
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
          // f16 storage rounds K, V, Q and the probabilities (2^-11 relative each).
          const double tol = type == KvType::kF32 ? 1e-4 : 2e-2;
          ASSERT_NEAR(out[(t * n_head + h) * dv + d], want[d], tol) << "pos " << p << " head " << h;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WindowsAndTypes, AttentionTest,
                         ::testing::Combine(::testing::Values(0, 1, 37, 100),
                                            ::testing::Values(KvType::kF32, KvType::kF16)));

}  // namespace
}  // namespace ellm::model

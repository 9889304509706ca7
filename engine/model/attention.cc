#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/f16_vec.h"
#include "quant/fp16.h"

namespace ellm::model {
namespace {

constexpr int kTile = 64;

// f32 storage: tiled online softmax (running max, sum and weighted V), so
// the only scratch is one tile of scores.
void AttendF32(const AttentionShape& shape, const KvCache& cache, int il, const float* qv, int kvh,
               int64_t lo, int64_t p, float* acc, float* o) {
  float scores[kTile];
  float m = -std::numeric_limits<float>::infinity();
  float l = 0.0f;
  std::fill(acc, acc + shape.head_dim_v, 0.0f);
  for (int64_t j0 = lo; j0 <= p; j0 += kTile) {
    const int n = static_cast<int>(std::min<int64_t>(kTile, p + 1 - j0));
    float tile_max = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < n; ++j) {
      const float* k =
          static_cast<const float*>(cache.K(il, j0 + j)) + int64_t{kvh} * shape.head_dim_k;
      float s = 0.0f;
      for (int i = 0; i < shape.head_dim_k; ++i) s += qv[i] * k[i];
      scores[j] = s;
      tile_max = std::max(tile_max, s);
    }
    const float m_new = std::max(m, tile_max);
    const float correction = std::exp(m - m_new);
    l *= correction;
    for (int d = 0; d < shape.head_dim_v; ++d) acc[d] *= correction;
    for (int j = 0; j < n; ++j) {
      const float w = std::exp(scores[j] - m_new);
      l += w;
      const float* v =
          static_cast<const float*>(cache.V(il, j0 + j)) + int64_t{kvh} * shape.head_dim_v;
      for (int d = 0; d < shape.head_dim_v; ++d) acc[d] += w * v[d];
    }
    m = m_new;
  }
  const float inv = 1.0f / l;
  for (int d = 0; d < shape.head_dim_v; ++d) o[d] = acc[d] * inv;
}

// f16 storage, rounding where llama.cpp's CPU backend rounds without flash
// attention: Q to f16 for the K·Q product, a two-pass softmax in f32 with
// the sum in double, the probabilities to f16 for the product with V.
// Scratch: one score per visible key (a row, never a matrix).
void AttendF16(const AttentionShape& shape, const KvCache& cache, int il, const float* qv, int kvh,
               int64_t lo, int64_t p, float* q16, std::vector<float>& scores, float* acc,
               float* o) {
  for (int i = 0; i < shape.head_dim_k; ++i) q16[i] = quant::Fp16ToFp32(quant::Fp32ToFp16(qv[i]));
  const int64_t n = p - lo + 1;
  if (static_cast<int64_t>(scores.size()) < n) scores.resize(static_cast<size_t>(n));
  const kernels::F16VecKernels& f16 = kernels::GetF16Vec();
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* k =
        static_cast<const uint16_t*>(cache.K(il, lo + j)) + int64_t{kvh} * shape.head_dim_k;
    const float s = f16.dot(shape.head_dim_k, k, q16);
    scores[static_cast<size_t>(j)] = s;
    max = std::max(max, s);
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const float e = std::exp(scores[static_cast<size_t>(j)] - max);
    scores[static_cast<size_t>(j)] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);
  std::fill(acc, acc + shape.head_dim_v, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float w = quant::Fp16ToFp32(quant::Fp32ToFp16(scores[static_cast<size_t>(j)] * inv));
    const uint16_t* v =
        static_cast<const uint16_t*>(cache.V(il, lo + j)) + int64_t{kvh} * shape.head_dim_v;
    f16.axpy(shape.head_dim_v, w, v, acc);
  }
  std::copy(acc, acc + shape.head_dim_v, o);
}

}  // namespace

void Attention(const AttentionShape& shape, KvCache& cache, int il, const float* q,
               int64_t n_tokens, int64_t pos0, float* out, ThreadPool& pool) {
  const int group = shape.n_head / shape.n_head_kv;
  const int64_t q_row = int64_t{shape.n_head} * shape.head_dim_k;
  const int64_t o_row = int64_t{shape.n_head} * shape.head_dim_v;
  pool.ParallelFor(n_tokens * shape.n_head, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(shape.head_dim_v));
    std::vector<float> q16(static_cast<size_t>(shape.head_dim_k));
    std::vector<float> scores;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task / shape.n_head;
      const int h = static_cast<int>(task % shape.n_head);
      const int64_t p = pos0 + t;
      const int64_t lo = shape.window > 0 ? std::max<int64_t>(0, p - shape.window + 1) : 0;
      const float* qv = q + t * q_row + int64_t{h} * shape.head_dim_k;
      float* o = out + t * o_row + int64_t{h} * shape.head_dim_v;
      if (cache.type() == KvType::kF32) {
        AttendF32(shape, cache, il, qv, h / group, lo, p, acc.data(), o);
      } else {
        AttendF16(shape, cache, il, qv, h / group, lo, p, q16.data(), scores, acc.data(), o);
      }
    }
  });
}

}  // namespace ellm::model

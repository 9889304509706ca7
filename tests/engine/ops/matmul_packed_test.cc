// ops::MatMul with packed weights against the row-wise path on the same
// matrix. Both encode the activations identically; they differ only in the
// order of float work, bounded as in kernels/gemm_packed.h: 1e-5 of
// S = sum_i (|w_i| + |m_i|) * |a_i| (m_i: Q4_K's min term), here taken with
// the f32 inputs x for a (twice the bound, for the activation rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ellm/engine/thread_pool.h"
#include "ops/matmul.h"
#include "ops/packed_weight.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace ellm::ops {
namespace {

using quant::TensorType;

struct Matrix {
  std::vector<uint8_t> bytes;
  Weight w;
};

Matrix RandomMatrix(TensorType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  Matrix m;
  const auto& tr = quant::Traits(type);
  const uint64_t row_bytes = quant::RowBytes(tr, cols);
  m.bytes.resize(row_bytes * rows);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : m.bytes) b = static_cast<uint8_t>(byte(rng));
  const int scale_at = type == TensorType::kQ6_K   ? 208
                       : type == TensorType::kQ3_K ? 108
                       : type == TensorType::kQ2_K ? 80
                                                   : 0;
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (size_t off = 0; off < m.bytes.size(); off += tr.block_bytes) {
    const bool two = type == TensorType::kQ4_K || type == TensorType::kQ5_K ||
                     type == TensorType::kQ4_1 || type == TensorType::kQ5_1 ||
                     type == TensorType::kQ2_K;
    for (int k = 0; k < (two ? 2 : 1); ++k) {
      const uint16_t h = quant::Fp32ToFp16(scale(rng));
      std::memcpy(m.bytes.data() + off + scale_at + 2 * k, &h, 2);
    }
  }
  m.w.type = type;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.row_bytes = row_bytes;
  m.w.data = m.bytes.data();
  return m;
}

double Bound(const Weight& w, int64_t r, const float* x) {
  std::vector<float> wf(w.cols), mf(w.cols, 0.0f);
  quant::DequantizeRow(w.type, w.Row(r), wf.data(), w.cols);
  // Quants zeroed (fifth bits too), scales kept: the min term. [begin,
  // end): a block's quant bytes.
  const size_t block = quant::Traits(w.type).block_bytes;
  size_t begin = 0, end = 0;
  if (w.type == TensorType::kQ4_K || w.type == TensorType::kQ5_K) begin = 16, end = block;
  if (w.type == TensorType::kQ4_1 || w.type == TensorType::kQ5_1) begin = 4, end = block;
  if (w.type == TensorType::kQ2_K) begin = 16, end = 80;
  if (end != 0) {
    std::vector<uint8_t> zeroed(w.Row(r), w.Row(r) + w.row_bytes);
    for (size_t b = 0; b < zeroed.size(); b += block) {
      std::memset(zeroed.data() + b + begin, 0, end - begin);
    }
    quant::DequantizeRow(w.type, zeroed.data(), mf.data(), w.cols);
  }
  double s = 0.0;
  for (int64_t i = 0; i < w.cols; ++i) s += (std::fabs(wf[i]) + std::fabs(mf[i])) * std::fabs(x[i]);
  return 2e-5 * s;
}

TEST(MatMulPacked, EqualsRowWiseProductWithinTolerance) {
  ThreadPool pool({.threads = 2});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Case {
    TensorType type;
    int64_t rows, cols;
  };
  const Case cases[] = {
      {TensorType::kQ5_0, 1024, 640}, {TensorType::kQ5_0, 100, 2048}, {TensorType::kQ8_0, 257, 640},
      {TensorType::kQ4_0, 64, 640},   {TensorType::kQ5_1, 45, 640},   {TensorType::kQ4_1, 29, 2048},
      {TensorType::kQ4_K, 640, 1024}, {TensorType::kQ5_K, 45, 1024},  {TensorType::kQ3_K, 37, 768},
      {TensorType::kQ2_K, 19, 1024},  {TensorType::kQ6_K, 77, 2048}};
  for (const Case& c : cases) {
    Matrix m = RandomMatrix(c.type, c.rows, c.cols, rng);
    const PackSource src{c.type, c.rows, c.cols, m.w.data, m.w.row_bytes, false};
    const auto packed = PackWeights({&src, 1}, 2);
    Weight pw = m.w;
    pw.packed = packed[0].get();
    for (int64_t n : {1, 7, 33}) {
      std::vector<float> x(n * c.cols);
      for (float& v : x) v = normal(rng);
      std::vector<float> want(n * c.rows), got(n * c.rows);
      MatMulScratch scratch;
      MatMul(m.w, x.data(), n, want.data(), pool, scratch);
      MatMul(pw, x.data(), n, got.data(), pool, scratch);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t r = 0; r < c.rows; ++r) {
          ASSERT_NEAR(got[t * c.rows + r], want[t * c.rows + r], Bound(m.w, r, &x[t * c.cols]))
              << quant::TypeName(c.type) << " rows=" << c.rows << " n=" << n << " t=" << t
              << " r=" << r;
        }
      }
      // A slice of rows that is not group-aligned, as the logits use.
      const int64_t begin = 5, end = c.rows - 3;
      std::vector<float> slice(n * (end - begin));
      MatMulRows(pw, x.data(), n, begin, end, slice.data(), pool, scratch);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t r = begin; r < end; ++r) {
          ASSERT_NEAR(slice[t * (end - begin) + r - begin], want[t * c.rows + r],
                      Bound(m.w, r, &x[t * c.cols]))
              << quant::TypeName(c.type) << " slice r=" << r;
        }
      }
    }
  }
}

// Several products of one input in one pool call (q, k, v; gate and up)
// give MatMul's bits for each: Q5_0 and Q8_0 share the Q8_0 activations, and
// odd row counts make tasks straddle two products. A row-wise weight sends
// the call back to MatMul per product, with the same results.
TEST(MatMulSameInput, EqualsMatMulPerProductBitForBit) {
  ThreadPool pool({.threads = 2});
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix q = RandomMatrix(TensorType::kQ5_0, 1024, 640, rng);
  Matrix k = RandomMatrix(TensorType::kQ5_0, 264, 640, rng);
  Matrix v = RandomMatrix(TensorType::kQ8_0, 77, 640, rng);
  std::vector<PackSource> src;
  for (Matrix* m : {&q, &k, &v}) {
    src.push_back({m->w.type, m->w.rows, m->w.cols, m->w.data, m->w.row_bytes, false});
  }
  const auto packed = PackWeights(src, 2);
  Weight pq = q.w, pk = k.w, pv = v.w;
  pq.packed = packed[0].get();
  pk.packed = packed[1].get();
  pv.packed = packed[2].get();
  for (int64_t n : {1, 8, 33}) {
    std::vector<float> x(n * 640);
    for (float& e : x) e = normal(rng);
    MatMulScratch scratch;
    std::vector<float> wq(n * 1024), wk(n * 264), wv(n * 77);
    MatMul(pq, x.data(), n, wq.data(), pool, scratch);
    MatMul(pk, x.data(), n, wk.data(), pool, scratch);
    MatMul(pv, x.data(), n, wv.data(), pool, scratch);
    std::vector<float> gq(n * 1024, -1.0f), gk(n * 264, -1.0f), gv(n * 77, -1.0f);
    const MatMulOutput together[] = {{&pq, gq.data()}, {&pk, gk.data()}, {&pv, gv.data()}};
    MatMulSameInput(together, x.data(), n, pool, scratch);
    EXPECT_EQ(gq, wq) << "n=" << n;
    EXPECT_EQ(gk, wk) << "n=" << n;
    EXPECT_EQ(gv, wv) << "n=" << n;
    // Row-wise q: the per-product fallback.
    std::vector<float> rq(n * 1024), fq(n * 1024), fk(n * 264);
    MatMul(q.w, x.data(), n, rq.data(), pool, scratch);
    const MatMulOutput mixed[] = {{&q.w, fq.data()}, {&pk, fk.data()}};
    MatMulSameInput(mixed, x.data(), n, pool, scratch);
    EXPECT_EQ(fq, rq) << "n=" << n;
    EXPECT_EQ(fk, wk) << "n=" << n;
  }
}

// An embedding lookup in a packed matrix gives the same floats as from the
// stored rows, in every format UnpackRow serves.
TEST(DequantizeWeightRow, PackedRowsEqualStoredRows) {
  std::mt19937 rng(5);
  for (TensorType type :
       {TensorType::kQ8_0, TensorType::kQ5_0, TensorType::kQ4_0, TensorType::kQ5_1,
        TensorType::kQ4_1, TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K,
        TensorType::kQ5_K, TensorType::kQ6_K}) {
    Matrix m = RandomMatrix(type, 21, 768, rng);  // 3 super-blocks, 24 blocks of 32
    const PackSource src{type, m.w.rows, m.w.cols, m.w.data, m.w.row_bytes, false};
    const auto packed = PackWeights({&src, 1}, 2);
    Weight pw = m.w;
    pw.packed = packed[0].get();
    std::vector<uint8_t> row_buf;
    std::vector<float> want(m.w.cols), got(m.w.cols);
    for (int64_t r = 0; r < m.w.rows; ++r) {
      quant::DequantizeRow(type, m.w.Row(r), want.data(), m.w.cols);
      DequantizeWeightRow(pw, r, got.data(), row_buf);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
          << quant::TypeName(type) << " r=" << r;
    }
  }
}

}  // namespace
}  // namespace ellm::ops

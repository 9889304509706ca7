// Matrix products with stored (possibly quantized) weights.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ellm/engine/thread_pool.h"
#include "ops/weight.h"

namespace ellm::ops {

// Reusable buffer for the quantized activations of one MatMul call.
struct MatMulScratch {
  std::vector<uint8_t> act;
  std::vector<float> block_d;      // packed Q8_0-family weights: per-block f32 scales
  std::vector<int32_t> block_sum;  // and quant sums of the activations (Q8_0)
  std::vector<float> block_s;      // or their f32 s (Q8_1: packed Q4_1, Q5_1)
};

// y[t * w.rows + r] = dot(w row r, x[t * w.cols ...]) for t < n_tokens, r < w.rows.
// x: [n_tokens, w.cols] row-major f32; y: [n_tokens, w.rows]; no aliasing.
// The activations are first encoded in quant::ActivationTypeFor(w.type), as
// ggml does, then each weight row is dotted with every token's row.
// Rows are split across the pool's threads. When w.packed is set, the packed
// GEMM kernels (kernels/gemm_packed.h) run on it instead of the row-wise dot
// kernels; results agree to the tolerance stated there (not bit for bit).
void MatMul(const Weight& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch);

// One product of MatMulSameInput: y = x . w^T, as MatMul's y.
struct MatMulOutput {
  const Weight* w;
  float* y;
};

// MatMul for each output, all of the same x. When every weight is packed,
// of the same width and activation encoding (a layer's q, k and v; gate
// and up), x is encoded once and one pool call runs every product's row
// groups: batched decode's products are small, and each pool call costs a
// wake-up. Otherwise MatMul per output. Results equal MatMul's, bit for bit.
void MatMulSameInput(std::span<const MatMulOutput> outs, const float* x, int64_t n_tokens,
                     ThreadPool& pool, MatMulScratch& scratch);

// As MatMul, but only for weight rows [row_begin, row_end); y is
// [n_tokens, row_end - row_begin]. Used to compute logits in slices.
void MatMulRows(const Weight& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y, ThreadPool& pool, MatMulScratch& scratch);

// out[0, w.cols) = row r of w in f32 (an embedding lookup), decoded from
// the packed copy when w has one (its file pages may have been released)
// with the same bits as from the file. `row_buf` is scratch, reused.
// REQUIRES: 0 <= r < w.rows.
void DequantizeWeightRow(const Weight& w, int64_t r, float* out, std::vector<uint8_t>& row_buf);

}  // namespace ellm::ops

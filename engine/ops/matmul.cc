#include "ops/matmul.h"

#include "kernels/vec_dot.h"
#include "quant/quant.h"

namespace ellm::ops {

void MatMulRows(const model::Weight& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y, ThreadPool& pool, MatMulScratch& scratch) {
  const quant::TensorType act_type = quant::ActivationTypeFor(w.type);
  const uint64_t act_row_bytes = quant::RowBytes(quant::Traits(act_type), w.cols);
  scratch.act.resize(act_row_bytes * n_tokens);
  uint8_t* act = scratch.act.data();
  pool.ParallelFor(n_tokens, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      quant::QuantizeRow(act_type, x + t * w.cols, act + t * act_row_bytes, w.cols);
    }
  });
  const kernels::VecDotFn dot = kernels::GetVecDot(w.type);
  // With several tokens, a four-row kernel unpacks each weight block once
  // per four tokens (bit-identical to `dot`, so batching changes nothing).
  const kernels::VecDot4Fn dot4 = n_tokens >= 4 ? kernels::GetVecDot4(w.type) : nullptr;
  const int64_t n_rows = row_end - row_begin;
  // Each task takes a slice of rows and runs all tokens through it, so a
  // weight row is read from memory once per call and reused from cache.
  pool.ParallelFor(n_rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* wr = w.Row(row_begin + r);
      int64_t t = 0;
      if (dot4 != nullptr) {
        float out[4];
        for (; t + 4 <= n_tokens; t += 4) {
          dot4(w.cols, wr, act + t * act_row_bytes, act_row_bytes, out);
          for (int k = 0; k < 4; ++k) y[(t + k) * n_rows + r] = out[k];
        }
      }
      for (; t < n_tokens; ++t) y[t * n_rows + r] = dot(w.cols, wr, act + t * act_row_bytes);
    }
  });
}

void MatMul(const model::Weight& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch) {
  MatMulRows(w, x, n_tokens, 0, w.rows, y, pool, scratch);
}

}  // namespace ellm::ops

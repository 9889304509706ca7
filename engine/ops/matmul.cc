#include "ops/matmul.h"

#include <algorithm>
#include <span>

#include "kernels/activations.h"
#include "kernels/gemm_packed.h"
#include "kernels/vec_dot.h"
#include "quant/quant.h"

namespace ellm::ops {
namespace {

// quant::QuantizeRow, with Q8_0 (the activation type of Q8_0, Q5_0 and Q4_0
// weights, most of a prefill's products) and Q8_K (of the K-quants) through
// the vectorised encoders, which write the same bytes.
void QuantizeActivationRow(quant::TensorType type, const float* x, uint8_t* dst, int64_t n) {
  const kernels::ActivationKernels& k = kernels::GetActivationKernels();
  switch (type) {
    case quant::TensorType::kQ8_0:
      k.quantize_q8_0(x, reinterpret_cast<quant::BlockQ8_0*>(dst), n);
      return;
    case quant::TensorType::kQ8_K:
      k.quantize_q8_k(x, reinterpret_cast<quant::BlockQ8_K*>(dst), n);
      return;
    default:
      quant::QuantizeRow(type, x, dst, n);
      return;
  }
}

// Row groups per task: 2 groups (16 rows), as the row-wise path's grain.
constexpr int64_t kGroupsPerTask = 2;

// The activations of a packed product, encoded as for the row-wise kernels
// (plus the Q8_0 block summaries) into `scratch`.
kernels::GemmActivations EncodeActivations(quant::TensorType act_type, int64_t cols, const float* x,
                                           int64_t n_tokens, ThreadPool& pool,
                                           MatMulScratch& scratch) {
  const uint64_t act_row_bytes = quant::RowBytes(quant::Traits(act_type), cols);
  scratch.act.resize(act_row_bytes * n_tokens);
  uint8_t* act = scratch.act.data();
  kernels::GemmActivations a;
  a.rows = act;
  a.stride = act_row_bytes;
  a.n_tokens = n_tokens;
  a.id = kernels::NewActivationsId();
  const bool q8_0 = act_type == quant::TensorType::kQ8_0;
  const bool q8_1 = act_type == quant::TensorType::kQ8_1;  // Q4_1, Q5_1 weights
  const int64_t nb = cols / 32;
  if (q8_0 || q8_1) {
    scratch.block_d.resize(static_cast<size_t>(n_tokens * nb));
    a.block_d = scratch.block_d.data();
  }
  if (q8_0) {
    scratch.block_sum.resize(static_cast<size_t>(n_tokens * nb));
    a.block_sum = scratch.block_sum.data();
  }
  if (q8_1) {
    scratch.block_s.resize(static_cast<size_t>(n_tokens * nb));
    a.block_s = scratch.block_s.data();
  }
  pool.ParallelFor(n_tokens, ThreadPool::RowGrain(cols), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      QuantizeActivationRow(act_type, x + t * cols, act + t * act_row_bytes, cols);
    }
    if (q8_0) {
      kernels::SummarizeQ8_0(act + t0 * act_row_bytes, act_row_bytes, t1 - t0, cols,
                             scratch.block_d.data() + t0 * nb, scratch.block_sum.data() + t0 * nb);
    }
    if (q8_1) {
      kernels::SummarizeQ8_1(act + t0 * act_row_bytes, act_row_bytes, t1 - t0, cols,
                             scratch.block_d.data() + t0 * nb, scratch.block_s.data() + t0 * nb);
    }
  });
  return a;
}

// Rows [row_begin, row_end) of one packed product into y ([n_tokens,
// row_end - row_begin]).
struct PackedJob {
  const PackedWeight* pw;
  int64_t row_begin, row_end;
  float* y;
  int64_t g_first, g_last;  // its row groups
};

PackedJob MakeJob(const PackedWeight& pw, int64_t row_begin, int64_t row_end, float* y) {
  return {&pw,
          row_begin,
          row_end,
          y,
          row_begin / kernels::kPackRows,
          (row_end + kernels::kPackRows - 1) / kernels::kPackRows};
}

// Every job's row groups in one pool call, tasks of whole groups (a task
// that straddles two jobs runs its part of each), all tokens each.
void RunPackedJobs(std::span<const PackedJob> jobs, const kernels::GemmActivations& a,
                   ThreadPool& pool) {
  int64_t total = 0;
  for (const PackedJob& j : jobs) total += j.g_last - j.g_first;
  pool.ParallelFor(total, kGroupsPerTask, [&](int64_t k0, int64_t k1) {
    int64_t base = 0;  // the first task index of job j
    for (const PackedJob& j : jobs) {
      const int64_t groups = j.g_last - j.g_first;
      const int64_t lo = std::max(k0, base) - base, hi = std::min(k1, base + groups) - base;
      base += groups;
      if (lo >= hi) continue;
      // Clipped to the requested rows: every task but a job's first and
      // last starts and ends on a group.
      const int64_t r0 = std::max(j.row_begin, (j.g_first + lo) * kernels::kPackRows);
      const int64_t r1 = std::min(j.row_end, (j.g_first + hi) * kernels::kPackRows);
      // Each thread reads its own node's replica when weights are replicated.
      kernels::GetGemmPacked(j.pw->matrix().type)(j.pw->MatrixForThisThread(), r0, r1, a,
                                                  j.y + (r0 - j.row_begin),
                                                  j.row_end - j.row_begin);
    }
  });
}

// The packed path of MatMulRows.
void PackedMatMulRows(const PackedWeight& pw, const float* x, int64_t n_tokens, int64_t row_begin,
                      int64_t row_end, float* y, ThreadPool& pool, MatMulScratch& scratch) {
  const kernels::PackedMatrix& pm = pw.matrix();
  const kernels::GemmActivations a =
      EncodeActivations(quant::ActivationTypeFor(pm.type), pm.cols, x, n_tokens, pool, scratch);
  const PackedJob job = MakeJob(pw, row_begin, row_end, y);
  RunPackedJobs({&job, 1}, a, pool);
}

}  // namespace

void MatMulRows(const Weight& w, const float* x, int64_t n_tokens, int64_t row_begin,
                int64_t row_end, float* y, ThreadPool& pool, MatMulScratch& scratch) {
  if (w.packed != nullptr) {
    PackedMatMulRows(*w.packed, x, n_tokens, row_begin, row_end, y, pool, scratch);
    return;
  }
  const quant::TensorType act_type = quant::ActivationTypeFor(w.type);
  const uint64_t act_row_bytes = quant::RowBytes(quant::Traits(act_type), w.cols);
  scratch.act.resize(act_row_bytes * n_tokens);
  uint8_t* act = scratch.act.data();
  pool.ParallelFor(n_tokens, ThreadPool::RowGrain(w.cols), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      QuantizeActivationRow(act_type, x + t * w.cols, act + t * act_row_bytes, w.cols);
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

void DequantizeWeightRow(const Weight& w, int64_t r, float* out, std::vector<uint8_t>& row_buf) {
  const uint8_t* row = w.Row(r);
  if (w.packed != nullptr) {
    row_buf.resize(w.row_bytes);
    kernels::UnpackRow(w.packed->matrix(), r, row_buf.data());
    row = row_buf.data();
  }
  quant::DequantizeRow(w.type, row, out, w.cols);
}

void MatMul(const Weight& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatMulScratch& scratch) {
  MatMulRows(w, x, n_tokens, 0, w.rows, y, pool, scratch);
}

void MatMulSameInput(std::span<const MatMulOutput> outs, const float* x, int64_t n_tokens,
                     ThreadPool& pool, MatMulScratch& scratch) {
  if (outs.empty()) return;
  const Weight& w0 = *outs[0].w;
  bool together = w0.packed != nullptr;
  for (const MatMulOutput& o : outs) {
    together = together && o.w->packed != nullptr && o.w->cols == w0.cols &&
               quant::ActivationTypeFor(o.w->type) == quant::ActivationTypeFor(w0.type);
  }
  if (!together) {
    for (const MatMulOutput& o : outs) MatMul(*o.w, x, n_tokens, o.y, pool, scratch);
    return;
  }
  const kernels::GemmActivations a =
      EncodeActivations(quant::ActivationTypeFor(w0.type), w0.cols, x, n_tokens, pool, scratch);
  std::vector<PackedJob> jobs;
  jobs.reserve(outs.size());
  for (const MatMulOutput& o : outs) jobs.push_back(MakeJob(*o.w->packed, 0, o.w->rows, o.y));
  RunPackedJobs(jobs, a, pool);
}

}  // namespace ellm::ops

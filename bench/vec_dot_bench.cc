// One weight row times one activation row, per kernel and ISA level: the
// inner loop of every matrix-vector product in decode. Row lengths are the
// real model's (Gemma 3 270M: d_model 640, FFN 2048). The reported time is
// per row; bytes_per_second is weight bytes streamed. Rows stay in L1, so this
// measures compute, not memory bandwidth.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "kernels/vec_dot.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace {

using ellm::IsaLevel;
using ellm::quant::TensorType;

// Byte offsets of the f16 scale fields per block; random bytes there could be
// subnormal or NaN and slow the float math down, so they are set to 0.01.
std::vector<int> ScaleOffsets(TensorType t) {
  switch (t) {
    case TensorType::kQ8_0:
    case TensorType::kQ5_0:
      return {0};
    case TensorType::kQ4_K:
      return {0, 2};
    case TensorType::kQ6_K:
      return {208};
    default:
      return {};
  }
}

void BM_VecDot(benchmark::State& state, TensorType t, IsaLevel level) {
  if (ellm::HostCpu().Level() < level) {
    state.SkipWithError("this CPU lacks the ISA level");
    return;
  }
  const int64_t n = state.range(0);
  const auto& traits = ellm::quant::Traits(t);
  std::mt19937 rng(42);
  std::vector<uint8_t> w(ellm::quant::RowBytes(traits, n));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  const uint16_t scale = ellm::quant::Fp32ToFp16(0.01f);
  for (size_t b = 0; b < w.size() / traits.block_bytes; ++b) {
    for (int off : ScaleOffsets(t)) std::memcpy(&w[b * traits.block_bytes + off], &scale, 2);
  }
  std::normal_distribution<float> normal;
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  const TensorType at = ellm::quant::ActivationTypeFor(t);
  std::vector<uint8_t> a(ellm::quant::RowBytes(ellm::quant::Traits(at), n));
  ellm::quant::QuantizeRow(at, x.data(), a.data(), n);

  const ellm::kernels::VecDotFn fn = ellm::kernels::GetVecDotAt(t, level);
  for (auto _ : state) {
    benchmark::DoNotOptimize(fn(n, w.data(), a.data()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.size()));
}

// K-quant rows must be multiples of 256, so 640-wide rows are stored in the
// 32-element formats (which is why the Q4_K_M model also holds Q5_0 and Q8_0).
void SmallAndFfnRows(benchmark::internal::Benchmark* b) { b->Arg(640)->Arg(2048); }
void FfnRows(benchmark::internal::Benchmark* b) { b->Arg(2048); }

#define ELLM_VEC_DOT_BENCH(type, rows)                                                           \
  BENCHMARK_CAPTURE(BM_VecDot, type##_ref, TensorType::k##type, IsaLevel::kScalar)->Apply(rows); \
  BENCHMARK_CAPTURE(BM_VecDot, type##_avx2, TensorType::k##type, IsaLevel::kAvx2)->Apply(rows);  \
  BENCHMARK_CAPTURE(BM_VecDot, type##_vnni, TensorType::k##type, IsaLevel::kAvx512Vnni)->Apply(rows)

ELLM_VEC_DOT_BENCH(Q8_0, SmallAndFfnRows);
ELLM_VEC_DOT_BENCH(Q5_0, SmallAndFfnRows);
ELLM_VEC_DOT_BENCH(Q4_K, FfnRows);
ELLM_VEC_DOT_BENCH(Q6_K, FfnRows);
ELLM_VEC_DOT_BENCH(F32, SmallAndFfnRows);

}  // namespace

// Matrix products on one thread at the real model's shapes (Gemma 3 270M
// Q4_K_M: d_model 640, q 1024, k/v 256, FFN 2048) with 256 tokens, the
// engine's prefill micro-batch, and with 1 token (decode): the packed GEMM (kernels/gemm_packed.h)
// against the row-wise dot kernels that ops::MatMul used before, in MAC/s. Activations are encoded
// once outside the loop (MatMul does that on every call; it is under 1% of the product).
//
// BM_Int8Peak measures the machine's integer SIMD ceiling: independent
// VPMADDUBSW + VPMADDWD + VPADDD chains (32 byte MACs per VPMADDUBSW), the
// instruction mix of every AVX2 integer dot product without VNNI
// (BM_Int8PeakVnni: VPDPBUSD on ZMM, the AVX-512 VNNI kernels';
// BM_Int8PeakAmx: TDPBSSD on AMX tiles). It uses intrinsics outside kernels/
// on purpose: it measures the CPU, not our code.
//
// Where the CPU has AMX, BM_GemmPacked's 256-token products run the AMX
// kernels (gemm_packed_amx.cc); ELLM_ISA=avx512vnni runs the VNNI ones for
// comparison.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/thread_pool.h"
#include "kernels/gemm_packed.h"
#include "kernels/vec_dot.h"
#include "ops/packed_weight.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace {

using ellm::IsaLevel;
using ellm::quant::TensorType;
namespace kernels = ellm::kernels;
namespace quant = ellm::quant;

struct Setup {
  std::vector<uint8_t> w, act;
  size_t row_bytes = 0, act_stride = 0;
  std::vector<float> block_d, block_s;
  std::vector<int32_t> block_sum;
};

Setup MakeSetup(TensorType t, int64_t rows, int64_t cols, int64_t tokens) {
  Setup s;
  const auto& tr = quant::Traits(t);
  s.row_bytes = quant::RowBytes(tr, cols);
  s.w.resize(s.row_bytes * rows);
  std::mt19937 rng(42);
  for (auto& b : s.w) b = static_cast<uint8_t>(rng());
  // Sane f16 scales: random bytes could be subnormal or NaN.
  const int at = t == TensorType::kQ6_K   ? 208
                 : t == TensorType::kQ3_K ? 108
                 : t == TensorType::kQ2_K ? 80
                                          : 0;
  const int count = t == TensorType::kQ4_K || t == TensorType::kQ5_K || t == TensorType::kQ4_1 ||
                            t == TensorType::kQ5_1 || t == TensorType::kQ2_K
                        ? 2
                        : 1;
  const uint16_t h = quant::Fp32ToFp16(0.01f);
  for (size_t off = 0; off < s.w.size(); off += tr.block_bytes) {
    for (int k = 0; k < count; ++k) std::memcpy(&s.w[off + at + 2 * k], &h, 2);
  }
  const TensorType act_type = quant::ActivationTypeFor(t);
  s.act_stride = quant::RowBytes(quant::Traits(act_type), cols);
  s.act.resize(s.act_stride * tokens);
  std::normal_distribution<float> normal;
  std::vector<float> x(cols);
  for (int64_t i = 0; i < tokens; ++i) {
    for (auto& v : x) v = normal(rng);
    quant::QuantizeRow(act_type, x.data(), s.act.data() + i * s.act_stride, cols);
  }
  if (act_type == TensorType::kQ8_0) {
    s.block_d.resize(tokens * cols / 32);
    s.block_sum.resize(tokens * cols / 32);
    kernels::SummarizeQ8_0(s.act.data(), s.act_stride, tokens, cols, s.block_d.data(),
                           s.block_sum.data());
  }
  if (act_type == TensorType::kQ8_1) {
    s.block_d.resize(tokens * cols / 32);
    s.block_s.resize(tokens * cols / 32);
    kernels::SummarizeQ8_1(s.act.data(), s.act_stride, tokens, cols, s.block_d.data(),
                           s.block_s.data());
  }
  return s;
}

void SetMacs(benchmark::State& state, int64_t rows, int64_t cols, int64_t tokens) {
  state.counters["MAC"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(rows * cols * tokens),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// args: rows (output features), cols (input features), tokens.
void BM_GemmPacked(benchmark::State& state, TensorType t) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  const Setup s = MakeSetup(t, rows, cols, tokens);
  const ellm::ops::PackSource src{t, rows, cols, s.w.data(), s.row_bytes, false};
  const auto packed = ellm::ops::PackWeights({&src, 1}, 1);
  kernels::GemmActivations a;
  a.rows = s.act.data();
  a.stride = s.act_stride;
  a.n_tokens = tokens;
  a.block_d = s.block_d.empty() ? nullptr : s.block_d.data();
  a.block_sum = s.block_sum.empty() ? nullptr : s.block_sum.data();
  a.block_s = s.block_s.empty() ? nullptr : s.block_s.data();
  const kernels::GemmPackedFn gemm = kernels::GetGemmPacked(t);
  std::vector<float> y(rows * tokens);
  for (auto _ : state) {
    gemm(packed[0]->matrix(), 0, rows, a, y.data(), rows);
    benchmark::DoNotOptimize(y.data());
  }
  SetMacs(state, rows, cols, tokens);
}

// llama.cpp's own kernel benchmark shape (test-backend-ops perf -o MUL_MAT:
// m = 4096 rows, k = 14336 columns, n = 1 or 512 tokens), for
// bench/gemm_vs_llama_cpp.py, which sets ELLM_GEMM_THREADS (default 1) to
// the threads ggml uses there: row groups are split over that many threads
// as ops::MatMul splits them. Wall-clock rate.
void BM_GemmPackedLlamaShape(benchmark::State& state, TensorType t) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  const char* env = std::getenv("ELLM_GEMM_THREADS");
  const int threads = env != nullptr ? std::max(1, std::atoi(env)) : 1;
  const Setup s = MakeSetup(t, rows, cols, tokens);
  const ellm::ops::PackSource src{t, rows, cols, s.w.data(), s.row_bytes, false};
  const auto packed = ellm::ops::PackWeights({&src, 1}, threads);
  kernels::GemmActivations a;
  a.rows = s.act.data();
  a.stride = s.act_stride;
  a.n_tokens = tokens;
  a.block_d = s.block_d.empty() ? nullptr : s.block_d.data();
  a.block_sum = s.block_sum.empty() ? nullptr : s.block_sum.data();
  a.block_s = s.block_s.empty() ? nullptr : s.block_s.data();
  const kernels::GemmPackedFn gemm = kernels::GetGemmPacked(t);
  ellm::ThreadPool pool({.threads = threads});
  const int64_t groups = (rows + kernels::kPackRows - 1) / kernels::kPackRows;
  std::vector<float> y(rows * tokens);
  for (auto _ : state) {
    pool.ParallelFor(groups, 2, [&](int64_t g0, int64_t g1) {
      const int64_t r0 = g0 * kernels::kPackRows, r1 = std::min(rows, g1 * kernels::kPackRows);
      gemm(packed[0]->matrix(), r0, r1, a, y.data() + r0, rows);
    });
    benchmark::DoNotOptimize(y.data());
  }
  SetMacs(state, rows, cols, tokens);
  state.counters["threads"] = threads;
}

// The row-wise loop ops::MatMul runs without packed weights.
void BM_RowWise(benchmark::State& state, TensorType t) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  const Setup s = MakeSetup(t, rows, cols, tokens);
  const kernels::VecDotFn dot = kernels::GetVecDot(t);
  const kernels::VecDot4Fn dot4 = kernels::GetVecDot4(t);
  std::vector<float> y(rows * tokens);
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* wr = s.w.data() + r * s.row_bytes;
      int64_t i = 0;
      if (dot4 != nullptr) {
        float out[4];
        for (; i + 4 <= tokens; i += 4) {
          dot4(cols, wr, s.act.data() + i * s.act_stride, s.act_stride, out);
          for (int k = 0; k < 4; ++k) y[(i + k) * rows + r] = out[k];
        }
      }
      for (; i < tokens; ++i) y[i * rows + r] = dot(cols, wr, s.act.data() + i * s.act_stride);
    }
    benchmark::DoNotOptimize(y.data());
  }
  SetMacs(state, rows, cols, tokens);
}

// The second Q8_0 shape is Gemma's tied output matrix (vocabulary x d_model)
// at one token: decode's largest product, 178 MB of weights. At 8 tokens it
// is batched decode's (`ellm bench --streams 8`); 32768 rows of it fit L3.
void Q8_0Shapes(benchmark::internal::Benchmark* b) {
  b->Args({256, 640, 256})->Args({262144, 640, 1})->Args({262144, 640, 8})->Args({32768, 640, 8});
}
void Q5_0Shapes(benchmark::internal::Benchmark* b) {
  b->Args({1024, 640, 256})->Args({256, 640, 256})->Args({2048, 640, 256})->Args({2048, 640, 1});
  b->Args({2048, 640, 8});
}
// The one-token shapes past the caches: Llama 3.2 1B's FFN gate (9.4 MB of
// Q4_K) and a quarter of its tied Q6_K output matrix (55 MB).
void Q4_KShapes(benchmark::internal::Benchmark* b) {
  b->Args({640, 1024, 256})->Args({640, 2048, 256})->Args({640, 2048, 1})->Args({8192, 2048, 1});
}
void Q6_KShapes(benchmark::internal::Benchmark* b) {
  b->Args({640, 2048, 256})->Args({640, 2048, 1})->Args({32768, 2048, 1});
}

#define ELLM_GEMM_BENCH(type, shapes)                         \
  BENCHMARK_CAPTURE(BM_GemmPacked, type, TensorType::k##type) \
      ->Apply(shapes)                                         \
      ->ArgNames({"rows", "cols", "tokens"})                  \
      ->Unit(benchmark::kMicrosecond);                        \
  BENCHMARK_CAPTURE(BM_RowWise, type, TensorType::k##type)    \
      ->Apply(shapes)                                         \
      ->ArgNames({"rows", "cols", "tokens"})                  \
      ->Unit(benchmark::kMicrosecond)

ELLM_GEMM_BENCH(Q5_0, Q5_0Shapes);
ELLM_GEMM_BENCH(Q8_0, Q8_0Shapes);
ELLM_GEMM_BENCH(Q4_0, Q5_0Shapes);
ELLM_GEMM_BENCH(Q5_1, Q5_0Shapes);
ELLM_GEMM_BENCH(Q4_1, Q5_0Shapes);
ELLM_GEMM_BENCH(Q4_K, Q4_KShapes);
ELLM_GEMM_BENCH(Q5_K, Q4_KShapes);
ELLM_GEMM_BENCH(Q6_K, Q6_KShapes);
ELLM_GEMM_BENCH(Q3_K, Q4_KShapes);
ELLM_GEMM_BENCH(Q2_K, Q4_KShapes);
ELLM_GEMM_BENCH(IQ4_NL, Q5_0Shapes);
ELLM_GEMM_BENCH(IQ4_XS, Q4_KShapes);

// Llama 3.1 8B's 4096 x 14336 matrix for decode and prefill; batched
// decode (8 streams) on a matrix twice as large as 14336 x 4096, which
// even at Q2_K (38 MB) does not fit a 32 MiB L3.
#define ELLM_GEMM_BENCH_LLAMA_SHAPE(type)                               \
  BENCHMARK_CAPTURE(BM_GemmPackedLlamaShape, type, TensorType::k##type) \
      ->Args({4096, 14336, 1})                                          \
      ->Args({14336, 8192, 8})                                          \
      ->Args({4096, 14336, 512})                                        \
      ->ArgNames({"rows", "cols", "tokens"})                            \
      ->Unit(benchmark::kMillisecond)                                   \
      ->UseRealTime()

ELLM_GEMM_BENCH_LLAMA_SHAPE(Q8_0);
// Gemma 3's output matrix with the pool (ELLM_GEMM_THREADS): decode, and
// batched decode of 8 streams.
BENCHMARK_CAPTURE(BM_GemmPackedLlamaShape, Q8_0_gemma_output, TensorType::kQ8_0)
    ->Args({262144, 640, 1})
    ->Args({262144, 640, 8})
    ->ArgNames({"rows", "cols", "tokens"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q5_0);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q4_0);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q5_1);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q4_1);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q2_K);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q3_K);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q4_K);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q5_K);
ELLM_GEMM_BENCH_LLAMA_SHAPE(Q6_K);
ELLM_GEMM_BENCH_LLAMA_SHAPE(IQ4_NL);
ELLM_GEMM_BENCH_LLAMA_SHAPE(IQ4_XS);

// Four chains, each with its own unsigned operand so that no product is
// shared; the signed operand is laundered through an empty asm every step so
// nothing is hoisted. VPMADDUBSW's latency (3-4 cycles) is hidden because
// only the VPADDD carries a dependency from step to step.
void BM_Int8Peak(benchmark::State& state) {
  if (ellm::HostCpu().Level() < IsaLevel::kAvx2) {
    state.SkipWithError("no AVX2");
    return;
  }
  constexpr int kChains = 4;
  constexpr int64_t kSteps = 1 << 14;
  __m256i u[kChains];
  for (int c = 0; c < kChains; ++c) u[c] = _mm256_set1_epi8(static_cast<char>(3 + c));
  __m256i s = _mm256_set1_epi8(-5);
  const __m256i ones = _mm256_set1_epi16(1);
  for (auto _ : state) {
    __m256i acc[kChains];
    for (auto& v : acc) v = _mm256_setzero_si256();
    for (int64_t i = 0; i < kSteps; ++i) {
      for (int c = 0; c < kChains; ++c) {
        acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(u[c], s), ones));
      }
      asm volatile("" : "+x"(s));
    }
    for (auto& v : acc) benchmark::DoNotOptimize(v);
  }
  state.counters["MAC"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kSteps * kChains * 32,
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Int8Peak)->Threads(1)->Threads(2)->UseRealTime();

// The VPMADDUBSW ceiling alone (i16 accumulation, no widening): the bound
// for kernels that, like the packed Q5_0/Q4_0/Q4_K ones, add several
// VPMADDUBSW results in i16 before one VPMADDWD.
void BM_Int8PeakMaddubsOnly(benchmark::State& state) {
  if (ellm::HostCpu().Level() < IsaLevel::kAvx2) {
    state.SkipWithError("no AVX2");
    return;
  }
  constexpr int kChains = 4;
  constexpr int64_t kSteps = 1 << 14;
  __m256i u[kChains];
  for (int c = 0; c < kChains; ++c) u[c] = _mm256_set1_epi8(static_cast<char>(3 + c));
  __m256i s = _mm256_set1_epi8(-5);
  for (auto _ : state) {
    __m256i acc[kChains];
    for (auto& v : acc) v = _mm256_setzero_si256();
    for (int64_t i = 0; i < kSteps; ++i) {
      for (int c = 0; c < kChains; ++c) {
        acc[c] = _mm256_add_epi16(acc[c], _mm256_maddubs_epi16(u[c], s));
      }
      asm volatile("" : "+x"(s));
    }
    for (auto& v : acc) benchmark::DoNotOptimize(v);
  }
  state.counters["MAC"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kSteps * kChains * 32,
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Int8PeakMaddubsOnly)->Threads(1)->Threads(2)->UseRealTime();

// The AVX-512 VNNI ceiling: independent VPDPBUSD chains on ZMM registers (64
// byte MACs each), the instruction of the packed kernels at that level.
// Enough chains to cover VPDPBUSD's latency at two issues per cycle.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void Int8PeakVnniLoop(
    benchmark::State& state) {
  constexpr int kChains = 12;
  constexpr int64_t kSteps = 1 << 14;
  __m512i u[kChains];
  for (int c = 0; c < kChains; ++c) u[c] = _mm512_set1_epi8(static_cast<char>(3 + c));
  __m512i s = _mm512_set1_epi8(-5);
  for (auto _ : state) {
    __m512i acc[kChains];
    for (auto& v : acc) v = _mm512_set1_epi32(0);
    for (int64_t i = 0; i < kSteps; ++i) {
      for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], u[c], s);
      asm volatile("" : "+v"(s));
    }
    for (auto& v : acc) benchmark::DoNotOptimize(v);
  }
  state.counters["MAC"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kSteps * kChains * 64,
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
void BM_Int8PeakVnni(benchmark::State& state) {
  if (ellm::HostCpu().Level() < IsaLevel::kAvx512Vnni) {
    state.SkipWithError("no AVX-512 VNNI");
    return;
  }
  Int8PeakVnniLoop(state);
}
BENCHMARK(BM_Int8PeakVnni)->Threads(1)->Threads(2)->UseRealTime();

// The AMX int8 ceiling: TDPBSSD into four independent accumulator tiles
// from two A and two B tiles of 16 rows x 64 bytes (16 x 16 x 64 MACs
// each), enough to cover its latency. Needs Linux's permission for the
// tiles, which HostCpu() asked for (IsaLevel::kAmx).
struct alignas(64) AmxPeakConfig {
  uint8_t palette_id, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
constexpr AmxPeakConfig kAmxPeakConfig = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
// kSteps x `four` (four tile products: tiles 0-3 from A tiles 4, 5 and B
// tiles 6, 7, loaded from a and b) per iteration; counts MACs.
template <class Four>
__attribute__((target("amx-tile"))) void AmxPeakLoop(benchmark::State& state, const void* a,
                                                     const void* b, double macs_per_product,
                                                     Four four) {
  constexpr int64_t kSteps = 1 << 12;
  asm volatile("" ::: "memory");  // _tile_loadd does not say it reads a and b
  _tile_loadconfig(&kAmxPeakConfig);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  for (auto _ : state) {
    for (int64_t i = 0; i < kSteps; ++i) four();
  }
  _tile_release();
  state.counters["MAC"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kSteps * 4 * macs_per_product,
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
void Int8PeakAmxLoop(benchmark::State& state) {
  alignas(64) int8_t a[16 * 64], b[16 * 64];
  std::memset(a, 3, sizeof(a));
  std::memset(b, -5, sizeof(b));
  AmxPeakLoop(state, a, b, 16 * 16 * 64, [] {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  });
}
void BM_Int8PeakAmx(benchmark::State& state) {
  if (ellm::HostCpu().Level() < IsaLevel::kAmx) {
    state.SkipWithError("no AMX, or Linux refused the tile state");
    return;
  }
  Int8PeakAmxLoop(state);
}
BENCHMARK(BM_Int8PeakAmx)->Threads(1)->Threads(2)->UseRealTime();

// The AMX bf16 ceiling (attention's tiles, --attn-scores tiles): TDPBF16PS
// the same way, 16 x 16 x 32 multiply-adds a tile product.
void Bf16PeakAmxLoop(benchmark::State& state) {
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  std::fill(a, a + 16 * 32, uint16_t{0x3F80});  // 1.0
  std::fill(b, b + 16 * 32, uint16_t{0x0000});  // +0: the sums stay finite
  AmxPeakLoop(state, a, b, 16 * 16 * 32, [] {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  });
}
void BM_Bf16PeakAmx(benchmark::State& state) {
  if (ellm::HostCpu().Level() < IsaLevel::kAmx || !ellm::HostCpu().amx_bf16) {
    state.SkipWithError("no AMX-BF16, or Linux refused the tile state");
    return;
  }
  Bf16PeakAmxLoop(state);
}
BENCHMARK(BM_Bf16PeakAmx)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

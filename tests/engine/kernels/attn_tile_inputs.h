// Random inputs of the attention tile kernels' tests (attn_tile_test.cc,
// attn_tile_amx_test.cc): f32 rows, and bf16 queries, keys, weights and
// values with the denormals, signed zeros and tiny products that the
// kernels' flushing must treat as the instructions do.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "quant/fp16.h"

namespace ellm::kernels {
namespace test_inputs {

inline std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

inline float Bits(uint32_t b) { return std::bit_cast<float>(b); }

// Queries as attention passes them to ScoresBf16 (rounded to bf16), keys
// stored as bf16, with a few denormals, zeros of both signs and tiny values
// whose products and sums fall below the normal range (flushed to zero).
inline void Bf16Inputs(int rows, int dim, int keys, int ks, std::mt19937& rng,
                       std::vector<float>* q, std::vector<uint16_t>* kb) {
  *q = Random(static_cast<size_t>(rows) * (dim + 3), rng);
  auto kf = Random(static_cast<size_t>(keys) * ks, rng);
  std::uniform_int_distribution<int> pick(0, 9);
  for (float& x : *q) {
    const int c = pick(rng);
    if (c == 0) x = Bits(0x00400000u | (rng() & 0x807F0000u));  // denormal bf16
    if (c == 1) x *= 1e-20f;                                    // products ~1e-40: denormal
    x = quant::Bf16ToFp32(quant::Fp32ToBf16(x));
  }
  kb->resize(kf.size());
  for (size_t i = 0; i < kf.size(); ++i) {
    const int c = pick(rng);
    (*kb)[i] = c == 0   ? static_cast<uint16_t>(0x0040u | (rng() & 0x803Fu))  // denormal
               : c == 1 ? quant::Fp32ToBf16(kf[i] * 1e-19f)
               : c == 2 ? static_cast<uint16_t>(0x8000u)  // -0
                        : quant::Fp32ToBf16(kf[i]);
  }
}

// Weights rounded to bf16 (as attention rounds them for the bf16-weights
// product), a few tiny; V rows as bf16 with denormals and zeros.
inline void Bf16PairInputs(int rows, int keys, int dim, int ps, std::mt19937& rng,
                           std::vector<float>* p, std::vector<uint16_t>* vb) {
  *p = Random(static_cast<size_t>(rows) * ps, rng);
  std::uniform_int_distribution<int> pick(0, 9);
  for (float& x : *p) {
    x = std::abs(x);
    if (pick(rng) == 0) x *= 1e-36f;
    x = quant::Bf16ToFp32(quant::Fp32ToBf16(x));
  }
  std::vector<float> unused_q;
  Bf16Inputs(1, 1, keys, dim, rng, &unused_q, vb);  // keys x dim values, as K's
}

}  // namespace test_inputs
using test_inputs::Bf16Inputs;
using test_inputs::Bf16PairInputs;
using test_inputs::Bits;
using test_inputs::Random;
}  // namespace ellm::kernels

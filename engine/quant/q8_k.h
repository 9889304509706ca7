// Q8_K: the activation format of every K-quant dot product: 256 values,
// x = d * q with an f32 scale, plus per-16 sums of q (ggml block_q8_K).
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQkK = 256;  // super-block size of all K-quants (ggml QK_K)

struct BlockQ8_K {
  float d;            // f32 scale
  int8_t qs[256];     // [-127, 127]
  int16_t bsums[16];  // bsums[g] = sum of qs[16g .. 16g+15]
};
static_assert(sizeof(BlockQ8_K) == 292);

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeQ8_K(const BlockQ8_K* x, float* y, int64_t n);
// As ggml's quantize_row_q8_K_ref: the value of largest magnitude maps to
// -127, q = nearest_int(-127 / max * x) (ties to even). An all-zero block gets
// d = 0, q = 0 and bsums = 0 (ggml leaves its bsums unset).
// REQUIRES: n % 256 == 0; x finite.
void QuantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace ellm::quant

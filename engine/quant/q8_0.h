// Q8_0: blocks of 32 values, x = d * q with signed 8-bit q (ggml block_q8_0).
// Both a weight format and the activation format of Q4_0, Q5_0 and Q8_0.
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQ8_0BlockElems = 32;

struct BlockQ8_0 {
  uint16_t d;     // f16 scale
  int8_t qs[32];  // the encoder writes [-127, 127]; stored weights may hold -128
};
static_assert(sizeof(BlockQ8_0) == 34);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeQ8_0(const BlockQ8_0* x, float* y, int64_t n);
// As ggml's quantize_row_q8_0_ref: d = amax / 127, q = roundf(x / d)
// (ties away from zero). REQUIRES: n % 32 == 0; x finite.
void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n);

}  // namespace ellm::quant

// Q2_K: 256 weights in 16 groups of 16, x = d * sc * q - dmin * m with 2-bit
// q and 4-bit sc, m per group (ggml block_q2_K).
#pragma once

#include <cstdint>

namespace ellm::quant {

struct BlockQ2_K {
  uint8_t scales[16];  // group g: sc in the low nibble, m in the high one
  uint8_t qs[64];      // element 128h + 32j + l: bits 2j..2j+1 of qs[32h + l]
  uint16_t d;          // f16 super-block scale of sc
  uint16_t dmin;       // f16 super-block scale of m
};
static_assert(sizeof(BlockQ2_K) == 84);

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeQ2_K(const BlockQ2_K* x, float* y, int64_t n);

}  // namespace ellm::quant

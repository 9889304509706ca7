// Q4_1: blocks of 32 weights, x = d * q + m with 4-bit q (ggml block_q4_1).
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQ4_1BlockElems = 32;

struct BlockQ4_1 {
  uint16_t d;      // f16 scale
  uint16_t m;      // f16 minimum (offset)
  uint8_t qs[16];  // element j in the low nibble of qs[j], element j+16 in the high one
};
static_assert(sizeof(BlockQ4_1) == 20);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeQ4_1(const BlockQ4_1* x, float* y, int64_t n);

}  // namespace ellm::quant

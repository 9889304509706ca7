// Q4_0: blocks of 32 weights, x = d * (q - 8) with 4-bit q (ggml block_q4_0).
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQ4_0BlockElems = 32;

struct BlockQ4_0 {
  uint16_t d;      // f16 scale
  uint8_t qs[16];  // element j in the low nibble of qs[j], element j+16 in the high one
};
static_assert(sizeof(BlockQ4_0) == 18);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeQ4_0(const BlockQ4_0* x, float* y, int64_t n);

}  // namespace ellm::quant

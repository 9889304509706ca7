// Q5_1: blocks of 32 weights, x = d * q + m with 5-bit q (ggml block_q5_1).
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQ5_1BlockElems = 32;

struct BlockQ5_1 {
  uint16_t d;      // f16 scale
  uint16_t m;      // f16 minimum (offset)
  uint8_t qh[4];   // bit j of this little-endian u32 is bit 4 of element j
  uint8_t qs[16];  // low 4 bits: element j in the low nibble of qs[j], j+16 in the high one
};
static_assert(sizeof(BlockQ5_1) == 24);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeQ5_1(const BlockQ5_1* x, float* y, int64_t n);

}  // namespace ellm::quant

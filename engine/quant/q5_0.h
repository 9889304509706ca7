// Q5_0: blocks of 32 weights, x = d * (q - 16) with 5-bit q (ggml block_q5_0).
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQ5_0BlockElems = 32;

struct BlockQ5_0 {
  uint16_t d;      // f16 scale
  uint8_t qh[4];   // bit j of this little-endian u32 is bit 4 of element j
  uint8_t qs[16];  // low 4 bits: element j in the low nibble of qs[j], j+16 in the high one
};
static_assert(sizeof(BlockQ5_0) == 22);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeQ5_0(const BlockQ5_0* x, float* y, int64_t n);

}  // namespace ellm::quant

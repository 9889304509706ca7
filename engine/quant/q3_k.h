// Q3_K: 256 weights in 16 groups of 16, x = d * (sc - 32) * q with q in
// [-4, 3] and 6-bit sc per group (ggml block_q3_K).
#pragma once

#include <cstdint>

namespace ellm::quant {

struct BlockQ3_K {
  uint8_t hmask[32];   // element 128h + 32j + l: bit 4h + j of hmask[l]; clear means q -= 4
  uint8_t qs[64];      // element 128h + 32j + l: bits 2j..2j+1 of qs[32h + l]
  uint8_t scales[12];  // 16 x 6 bits, packed as UnpackQ3_KScales reads them
  uint16_t d;          // f16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110);

// The 16 group scales sc - 32, in [-32, 31]: low nibbles from bytes 0..7
// (groups 0..7 low nibble, 8..15 high nibble), top 2 bits from bytes 8..11.
void UnpackQ3_KScales(const uint8_t packed[12], int8_t out[16]);

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeQ3_K(const BlockQ3_K* x, float* y, int64_t n);

}  // namespace ellm::quant

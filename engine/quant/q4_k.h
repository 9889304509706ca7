// Q4_K: 256 weights in 8 groups of 32, x = d * sc * q - dmin * m with 4-bit q
// and 6-bit sc, m per group (ggml block_q4_K).
#pragma once

#include <cstdint>

namespace ellm::quant {

struct BlockQ4_K {
  uint16_t d;          // f16 super-block scale of sc
  uint16_t dmin;       // f16 super-block scale of m
  uint8_t scales[12];  // 8 sc + 8 m, 6 bits each, packed as UnpackK4Scales reads them
  uint8_t qs[128];     // element 64c + l: low nibble of qs[32c + l]; 64c + 32 + l: high
};
static_assert(sizeof(BlockQ4_K) == 144);

// The 6-bit scales and mins shared by Q4_K and Q5_K (ggml get_scale_min_k4):
// groups 0..3 take the low 6 bits of bytes 0..3 (sc) and 4..7 (m); groups
// 4..7 take a nibble of bytes 8..11 plus the top 2 bits of bytes 0..7.
void UnpackK4Scales(const uint8_t packed[12], uint8_t sc[8], uint8_t m[8]);
// The inverse: packs 8 scales and 8 mins (each < 64) into 12 bytes.
void PackK4Scales(const uint8_t sc[8], const uint8_t m[8], uint8_t packed[12]);

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeQ4_K(const BlockQ4_K* x, float* y, int64_t n);

}  // namespace ellm::quant

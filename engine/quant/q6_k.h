// Q6_K: 256 weights in 16 groups of 16, x = d * sc * (q - 32) with 6-bit q
// and signed 8-bit sc per group (ggml block_q6_K).
#pragma once

#include <cstdint>

namespace ellm::quant {

struct BlockQ6_K {
  // Element 128h + 32k + l (k = 0..3, l = 0..31):
  //   low 4 bits:  ql[64h + l] (k = 0), ql[64h + 32 + l] (k = 1) low nibbles,
  //                the same bytes' high nibbles for k = 2, 3;
  //   high 2 bits: bits 2k..2k+1 of qh[32h + l].
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];  // group g = element / 16
  uint16_t d;         // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeQ6_K(const BlockQ6_K* x, float* y, int64_t n);

}  // namespace ellm::quant

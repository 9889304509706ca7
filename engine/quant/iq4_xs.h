// IQ4_XS: 256 weights in 8 sub-blocks of 32, x = d * (ls - 32) *
// kIq4NlValues[q] with a 4-bit index q and a 6-bit sub-block scale ls
// (ggml block_iq4_xs).
#pragma once

#include <cstdint>

namespace ellm::quant {

struct BlockIq4Xs {
  uint16_t d;           // f16 super-block scale
  uint16_t scales_h;    // bits 2ib+1:2ib: the top two bits of sub-block ib's ls
  uint8_t scales_l[4];  // nibble ib % 2 of byte ib / 2: the low four bits of ls
  uint8_t qs[128];      // element 32ib + j: low nibble of qs[16ib + j]; 32ib + 16 + j: high
};
static_assert(sizeof(BlockIq4Xs) == 136);

// Sub-block ib's signed scale, ls - 32 in [-32, 31] (ggml dequantize_row_iq4_xs).
inline int Iq4XsScale(const BlockIq4Xs& x, int ib) {
  const int ls =
      ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((x.scales_h >> (2 * ib)) & 3) << 4);
  return ls - 32;
}

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeIq4Xs(const BlockIq4Xs* x, float* y, int64_t n);

}  // namespace ellm::quant

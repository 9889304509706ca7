// Q5_K: Q4_K with a fifth bit per weight (ggml block_q5_K):
// x = d * sc * q - dmin * m with 5-bit q, 8 groups of 32.
#pragma once

#include <cstdint>

namespace ellm::quant {

struct BlockQ5_K {
  uint16_t d;          // f16 super-block scale of sc
  uint16_t dmin;       // f16 super-block scale of m
  uint8_t scales[12];  // as Q4_K (UnpackK4Scales in q4_k.h)
  uint8_t qh[32];      // element 32g + l: bit g of qh[l] is bit 4
  uint8_t qs[128];     // low 4 bits, laid out as Q4_K's qs
};
static_assert(sizeof(BlockQ5_K) == 176);

// y: n floats. REQUIRES: n % 256 == 0.
void DequantizeQ5_K(const BlockQ5_K* x, float* y, int64_t n);

}  // namespace ellm::quant

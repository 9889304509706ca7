// Q8_1: Q8_0 plus s = d * sum(q), so that dot products with offset formats
// (Q4_1, Q5_1) need no extra pass (ggml block_q8_1). Activations only.
#pragma once

#include <cstdint>

namespace ellm::quant {

inline constexpr int kQ8_1BlockElems = 32;

struct BlockQ8_1 {
  uint16_t d;     // f16 scale
  uint16_t s;     // f16 of d * sum(qs), rounded once from f32
  int8_t qs[32];  // [-127, 127]
};
static_assert(sizeof(BlockQ8_1) == 36);

// y: n floats. REQUIRES: n % 32 == 0.
void DequantizeQ8_1(const BlockQ8_1* x, float* y, int64_t n);
// As ggml's quantize_row_q8_1_ref. REQUIRES: n % 32 == 0; x finite.
void QuantizeQ8_1(const float* x, BlockQ8_1* y, int64_t n);

}  // namespace ellm::quant

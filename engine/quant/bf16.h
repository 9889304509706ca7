// BF16: bfloat16, the top half of an f32, one element per "block".
// Conversions in fp16.h.
#pragma once

#include <cstdint>

namespace ellm::quant {

void DequantizeBF16(const uint16_t* x, float* y, int64_t n);
// Rounds to nearest even and quiets NaNs (ggml_compute_fp32_to_bf16).
void QuantizeBF16(const float* x, uint16_t* y, int64_t n);

}  // namespace ellm::quant

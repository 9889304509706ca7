// F16: IEEE binary16 (ggml_half), one element per "block". Conversions in
// fp16.h.
#pragma once

#include <cstdint>

namespace ellm::quant {

void DequantizeF16(const uint16_t* x, float* y, int64_t n);
// Rounds to nearest even (as F16C and ggml's GGML_FP32_TO_FP16 on x86).
void QuantizeF16(const float* x, uint16_t* y, int64_t n);

}  // namespace ellm::quant

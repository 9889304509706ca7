// F32: plain IEEE binary32, one element per "block".
#pragma once

#include <cstdint>

namespace ellm::quant {

// Copies n floats. REQUIRES: x and y do not overlap.
void DequantizeF32(const float* x, float* y, int64_t n);
void QuantizeF32(const float* x, float* y, int64_t n);

}  // namespace ellm::quant

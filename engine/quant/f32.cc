// F32 "decode" is a copy; kept as a format file so the table stays uniform.
#include "quant/f32.h"

#include <cstring>

namespace ellm::quant {

void DequantizeF32(const float* x, float* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}
void QuantizeF32(const float* x, float* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace ellm::quant

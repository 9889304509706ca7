// BF16 row conversions; the scalar rules are in fp16.h.
#include "quant/bf16.h"

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeBF16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Bf16ToFp32(x[i]);
}
void QuantizeBF16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToBf16(x[i]);
}

}  // namespace ellm::quant

// Reference decode of Q4_0, element for element as ggml's dequantize_row_q4_0.
#include "quant/q4_0.h"

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeQ4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ4_0BlockElems; ++b, y += kQ4_0BlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((x[b].qs[j] & 0x0f) - 8) * d;
      y[j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

}  // namespace ellm::quant

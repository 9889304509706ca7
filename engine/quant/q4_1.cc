// Reference decode of Q4_1, element for element as ggml's dequantize_row_q4_1
// (multiply, then add: this file is built with -ffp-contract=off).
#include "quant/q4_1.h"

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeQ4_1(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ4_1BlockElems; ++b, y += kQ4_1BlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    const float m = Fp16ToFp32(x[b].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(x[b].qs[j] & 0x0f) * d + m;
      y[j + 16] = static_cast<float>(x[b].qs[j] >> 4) * d + m;
    }
  }
}

}  // namespace ellm::quant

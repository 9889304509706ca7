// Reference decode of Q5_1, element for element as ggml's dequantize_row_q5_1
// (multiply, then add: this file is built with -ffp-contract=off).
#include "quant/q5_1.h"

#include <cstring>

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeQ5_1(const BlockQ5_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ5_1BlockElems; ++b, y += kQ5_1BlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    const float m = Fp16ToFp32(x[b].m);
    uint32_t qh;
    std::memcpy(&qh, x[b].qh, sizeof(qh));
    for (int j = 0; j < 16; ++j) {
      const int lo = (x[b].qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (x[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

}  // namespace ellm::quant

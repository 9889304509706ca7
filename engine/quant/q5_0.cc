// Reference decode of Q5_0, element for element as ggml's dequantize_row_q5_0.
#include "quant/q5_0.h"

#include <cstring>

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeQ5_0(const BlockQ5_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ5_0BlockElems; ++b, y += kQ5_0BlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    uint32_t qh;
    std::memcpy(&qh, x[b].qh, sizeof(qh));
    for (int j = 0; j < 16; ++j) {
      const int lo = (x[b].qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (x[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

}  // namespace ellm::quant

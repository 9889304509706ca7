// Reference decode of Q6_K, element for element as ggml's dequantize_row_q6_K:
// (d * sc) * q, in that order.
#include "quant/q6_k.h"

#include "quant/fp16.h"
#include "quant/q8_k.h"

namespace ellm::quant {

void DequantizeQ6_K(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b, y += kQkK) {
    const float d = Fp16ToFp32(x[b].d);
    for (int e = 0; e < kQkK; ++e) {
      const int h = e / 128, k = (e / 32) % 4, l = e % 32;
      const uint8_t low_byte = x[b].ql[64 * h + 32 * (k % 2) + l];
      const int low = (low_byte >> (4 * (k / 2))) & 0x0f;
      const int high = (x[b].qh[32 * h + l] >> (2 * k)) & 3;
      const float dl = d * static_cast<float>(x[b].scales[e / 16]);
      y[e] = dl * static_cast<float>((low | (high << 4)) - 32);
    }
  }
}

}  // namespace ellm::quant

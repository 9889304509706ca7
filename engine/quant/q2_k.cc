// Reference decode of Q2_K, element for element as ggml's dequantize_row_q2_K
// (multiply, then subtract: this file is built with -ffp-contract=off).
#include "quant/q2_k.h"

#include "quant/fp16.h"
#include "quant/q8_k.h"

namespace ellm::quant {

void DequantizeQ2_K(const BlockQ2_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    const float dmin = Fp16ToFp32(x[b].dmin);
    for (int g = 0; g < 16; ++g, y += 16) {
      const float dl = d * static_cast<float>(x[b].scales[g] & 0x0f);
      const float ml = dmin * static_cast<float>(x[b].scales[g] >> 4);
      // Group g covers elements 16g..16g+15 = 128h + 32j + l.
      const int h = g / 8, j = (g / 2) % 4, l0 = (g % 2) * 16;
      const uint8_t* q = x[b].qs + 32 * h + l0;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>((q[l] >> (2 * j)) & 3) - ml;
      }
    }
  }
}

}  // namespace ellm::quant

// Reference decode of Q5_K, element for element as ggml's dequantize_row_q5_K
// (multiply, then subtract: this file is built with -ffp-contract=off).
#include "quant/q5_k.h"

#include "quant/fp16.h"
#include "quant/q4_k.h"
#include "quant/q8_k.h"

namespace ellm::quant {

void DequantizeQ5_K(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    const float dmin = Fp16ToFp32(x[b].dmin);
    uint8_t sc[8], m[8];
    UnpackK4Scales(x[b].scales, sc, m);
    for (int g = 0; g < 8; ++g, y += 32) {
      const float dl = d * static_cast<float>(sc[g]);
      const float ml = dmin * static_cast<float>(m[g]);
      const uint8_t* q = x[b].qs + 32 * (g / 2);
      const int shift = 4 * (g % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0x0f) | (((x[b].qh[l] >> g) & 1) << 4);
        y[l] = dl * static_cast<float>(v) - ml;
      }
    }
  }
}

}  // namespace ellm::quant

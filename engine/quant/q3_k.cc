// Reference decode of Q3_K, element for element as ggml's dequantize_row_q3_K.
#include "quant/q3_k.h"

#include "quant/fp16.h"
#include "quant/q8_k.h"

namespace ellm::quant {

void UnpackQ3_KScales(const uint8_t packed[12], int8_t out[16]) {
  for (int g = 0; g < 16; ++g) {
    const int low = (packed[g % 8] >> (4 * (g / 8))) & 0x0f;
    const int high = (packed[8 + g % 4] >> (2 * (g / 4))) & 0x03;
    out[g] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

void DequantizeQ3_K(const BlockQ3_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    int8_t sc[16];
    UnpackQ3_KScales(x[b].scales, sc);
    for (int g = 0; g < 16; ++g, y += 16) {
      const float dl = d * static_cast<float>(sc[g]);
      const int h = g / 8, j = (g / 2) % 4, l0 = (g % 2) * 16;
      for (int l = l0; l < l0 + 16; ++l) {
        int q = (x[b].qs[32 * h + l] >> (2 * j)) & 3;
        if ((x[b].hmask[l] & (1u << (4 * h + j))) == 0) q -= 4;
        y[l - l0] = dl * static_cast<float>(q);
      }
    }
  }
}

}  // namespace ellm::quant

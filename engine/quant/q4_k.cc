// Reference decode of Q4_K, element for element as ggml's dequantize_row_q4_K
// (multiply, then subtract: this file is built with -ffp-contract=off).
#include "quant/q4_k.h"

#include "quant/fp16.h"
#include "quant/q8_k.h"

namespace ellm::quant {

void UnpackK4Scales(const uint8_t packed[12], uint8_t sc[8], uint8_t m[8]) {
  for (int g = 0; g < 4; ++g) {
    sc[g] = packed[g] & 63;
    m[g] = packed[g + 4] & 63;
  }
  for (int g = 4; g < 8; ++g) {
    sc[g] = static_cast<uint8_t>((packed[g + 4] & 0x0f) | ((packed[g - 4] >> 6) << 4));
    m[g] = static_cast<uint8_t>((packed[g + 4] >> 4) | ((packed[g] >> 6) << 4));
  }
}

void PackK4Scales(const uint8_t sc[8], const uint8_t m[8], uint8_t packed[12]) {
  for (int g = 0; g < 4; ++g) {
    packed[g] = static_cast<uint8_t>((sc[g] & 63) | ((sc[g + 4] >> 4) << 6));
    packed[g + 4] = static_cast<uint8_t>((m[g] & 63) | ((m[g + 4] >> 4) << 6));
    packed[g + 8] = static_cast<uint8_t>((sc[g + 4] & 0x0f) | ((m[g + 4] & 0x0f) << 4));
  }
}

void DequantizeQ4_K(const BlockQ4_K* x, float* y, int64_t n) {
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
      for (int l = 0; l < 32; ++l) y[l] = dl * static_cast<float>((q[l] >> shift) & 0x0f) - ml;
    }
  }
}

}  // namespace ellm::quant

// Reference decode and encode of Q8_K (ggml dequantize_row_q8_K and
// quantize_row_q8_K_ref).
#include "quant/q8_k.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace ellm::quant {
namespace {

// Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 puts the
// integer part in the low mantissa bits and lets the FPU's default rounding
// do the work. This is ggml's nearest_int, which quantize_row_q8_K_ref uses.
int NearestInt(float v) {
  const float shifted = v + 12582912.0f;
  return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

}  // namespace

void DequantizeQ8_K(const BlockQ8_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b, y += kQkK) {
    for (int j = 0; j < kQkK; ++j) y[j] = x[b].d * static_cast<float>(x[b].qs[j]);
  }
}

void QuantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQkK; ++b, x += kQkK) {
    float amax = 0.0f;
    float max = 0.0f;  // the signed value of largest magnitude, first one wins
    for (int j = 0; j < kQkK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      y[b].d = 0.0f;
      std::memset(y[b].qs, 0, sizeof(y[b].qs));
      std::memset(y[b].bsums, 0, sizeof(y[b].bsums));
      continue;
    }
    // -127 rather than -128 keeps every q in [-127, 127] (ggml: "needed for
    // IQ2_XXS", and it is what lets the AVX2 kernels use sign tricks).
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQkK; ++j) {
      y[b].qs[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[j])));
    }
    for (int g = 0; g < kQkK / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[b].qs[16 * g + l];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace ellm::quant

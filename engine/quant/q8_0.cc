// Reference decode and encode of Q8_0 (ggml dequantize_row_q8_0 and
// quantize_row_q8_0_ref).
#include "quant/q8_0.h"

#include <algorithm>
#include <cmath>

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeQ8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ8_0BlockElems; ++b, y += kQ8_0BlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < kQ8_0BlockElems; ++j) y[j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ8_0BlockElems; ++b, x += kQ8_0BlockElems) {
    float amax = 0.0f;
    for (int j = 0; j < kQ8_0BlockElems; ++j) amax = std::max(amax, std::fabs(x[j]));
    // The scale is rounded to f32 and its inverse taken from that f32, not
    // from the f16 that is stored: ggml does the same, so must we.
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = Fp32ToFp16(d);
    for (int j = 0; j < kQ8_0BlockElems; ++j) {
      y[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    }
  }
}

}  // namespace ellm::quant

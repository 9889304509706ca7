// Reference decode and encode of Q8_1 (ggml quantize_row_q8_1_ref).
#include "quant/q8_1.h"

#include <algorithm>
#include <cmath>

#include "quant/fp16.h"

namespace ellm::quant {

void DequantizeQ8_1(const BlockQ8_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ8_1BlockElems; ++b, y += kQ8_1BlockElems) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < kQ8_1BlockElems; ++j) y[j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

void QuantizeQ8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQ8_1BlockElems; ++b, x += kQ8_1BlockElems) {
    float amax = 0.0f;
    for (int j = 0; j < kQ8_1BlockElems; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = Fp32ToFp16(d);
    int sum = 0;
    for (int j = 0; j < kQ8_1BlockElems; ++j) {
      y[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
      sum += y[b].qs[j];
    }
    // s uses the f32 d, not the stored f16 one, as ggml does.
    y[b].s = Fp32ToFp16(static_cast<float>(sum) * d);
  }
}

}  // namespace ellm::quant

// Scalar references of activations.h: the quant/ encoders, element by element.
#include <algorithm>

#include "kernels/activations.h"
#include "quant/fp16.h"

namespace ellm::kernels::internal {
namespace {

void GegluF16Table(const uint16_t* table, const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    float a;
    if (g <= -10.0f) {
      a = 0.0f;
    } else if (g >= 10.0f) {
      a = g;
    } else {
      a = quant::Fp16ToFp32(table[quant::Fp32ToFp16(g)]);
    }
    y[i] = a * up[i];
  }
}

void RoundF16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = quant::Fp16ToFp32(quant::Fp32ToFp16(x[i]));
}

void RoundBf16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = quant::Bf16ToFp32(quant::Fp32ToBf16(x[i]));
}

int64_t ArgMax(const float* x, int64_t n) { return std::max_element(x, x + n) - x; }

}  // namespace

const ActivationKernels kActivationsRef = {
    quant::QuantizeQ8_0, quant::QuantizeQ8_K, GegluF16Table, RoundF16, RoundBf16, ArgMax};

}  // namespace ellm::kernels::internal

// Scalar references for f16_vec.h.
#include "kernels/f16_vec_isa.h"
#include "quant/fp16.h"

namespace ellm::kernels::internal {
namespace {

float DotRef(int n, const uint16_t* k, const float* q) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += quant::Fp16ToFp32(k[i]) * q[i];
  return s;
}

void AxpyRef(int n, float w, const uint16_t* v, float* y) {
  for (int i = 0; i < n; ++i) y[i] += w * quant::Fp16ToFp32(v[i]);
}

}  // namespace

const F16VecKernels kF16VecRef = {DotRef, AxpyRef};

}  // namespace ellm::kernels::internal

// Scalar references for attn_tile.h: the truth the SIMD versions are tested
// against.
#include <cmath>
#include <cstring>

#include "kernels/attn_tile.h"
#include "quant/fp16.h"

namespace ellm::kernels::internal {
namespace {

void ScoresRef(int rows, int keys, int dim, const float* q, int64_t qs, const float* k, int64_t ks,
               float* s, int64_t ss) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < keys; ++j) {
      float sum = 0.0f;
      for (int d = 0; d < dim; ++d) sum += q[r * qs + d] * k[j * ks + d];
      s[r * ss + j] = sum;
    }
  }
}

void AccumulateRef(int rows, int keys, int dim, const float* p, int64_t ps, const float* v,
                   int64_t vs, float* o, int64_t os) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < keys; ++j) {
      const float w = p[r * ps + j];
      for (int d = 0; d < dim; ++d) o[r * os + d] += w * v[j * vs + d];
    }
  }
}

void ExpRef(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void F16ToF32Ref(int64_t n, const uint16_t* src, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = quant::Fp16ToFp32(src[i]);
}

void Bf16ToF32Ref(int64_t n, const uint16_t* src, float* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t{src[i]} << 16;
    std::memcpy(&dst[i], &bits, 4);
  }
}

}  // namespace

const AttnTileKernels kAttnTileRef = {ScoresRef, AccumulateRef, ExpRef, F16ToF32Ref, Bf16ToF32Ref};

}  // namespace ellm::kernels::internal

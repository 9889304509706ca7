// Scalar references for attn_tile.h: the truth the SIMD versions are tested
// against. Products are added with an explicit fma, so whether the compiler
// contracts them cannot differ between the f32 and the half-input versions.
#include <cmath>
#include <cstring>

#include "kernels/attn_tile.h"
#include "quant/fp16.h"
#include "quant/q8_0.h"

namespace ellm::kernels::internal {
namespace {

float Widen(float x) { return x; }
float WidenF16(uint16_t h) { return quant::Fp16ToFp32(h); }
float WidenBf16(uint16_t h) {
  const uint32_t bits = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T, float (*W)(T)>
void ScoresRef(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
               float* s, int64_t ss) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < keys; ++j) {
      float sum = 0.0f;
      for (int d = 0; d < dim; ++d) sum = std::fma(q[r * qs + d], W(k[j * ks + d]), sum);
      s[r * ss + j] = sum;
    }
  }
}

// The fused (half-input) entries: the prefetch hint is ignored here.
template <class T, float (*W)(T)>
void ScoresHalfRef(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
                   float* s, int64_t ss, const void*, int64_t) {
  ScoresRef<T, W>(rows, keys, dim, q, qs, k, ks, s, ss);
}

template <class T, float (*W)(T)>
void AccumulateRef(int rows, int keys, int dim, const float* p, int64_t ps, const T* v, int64_t vs,
                   float* o, int64_t os) {
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < keys; ++j) {
      const float w = p[r * ps + j];
      for (int d = 0; d < dim; ++d) o[r * os + d] = std::fma(w, W(v[j * vs + d]), o[r * os + d]);
    }
  }
}

template <class T, float (*W)(T)>
void AccumulateHalfRef(int rows, int keys, int dim, const float* p, int64_t ps, const T* v,
                       int64_t vs, float* o, int64_t os, const void*, int64_t) {
  AccumulateRef<T, W>(rows, keys, dim, p, ps, v, vs, o, os);
}

void ExpRef(int64_t n, const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void F16ToF32Ref(int64_t n, const uint16_t* src, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = WidenF16(src[i]);
}

void Bf16ToF32Ref(int64_t n, const uint16_t* src, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = WidenBf16(src[i]);
}

void Q8_0ToF32Ref(int64_t n, const uint8_t* src, float* dst) {
  quant::DequantizeQ8_0(reinterpret_cast<const quant::BlockQ8_0*>(src), dst, n);
}

}  // namespace

const AttnTileKernels kAttnTileRef = {ScoresRef<float, Widen>,
                                      AccumulateRef<float, Widen>,
                                      ExpRef,
                                      F16ToF32Ref,
                                      Bf16ToF32Ref,
                                      ScoresHalfRef<uint16_t, WidenF16>,
                                      AccumulateHalfRef<uint16_t, WidenF16>,
                                      ScoresHalfRef<uint16_t, WidenBf16>,
                                      AccumulateHalfRef<uint16_t, WidenBf16>,
                                      Q8_0ToF32Ref};

}  // namespace ellm::kernels::internal

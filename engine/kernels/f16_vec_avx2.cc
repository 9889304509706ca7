// AVX2 + F16C versions of f16_vec.h (x86-64-v3, the release baseline).
#include <immintrin.h>

#include "kernels/f16_vec_isa.h"
#include "quant/fp16.h"

namespace ellm::kernels::internal {
namespace {

float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

float DotAvx2(int n, const uint16_t* k, const float* q) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
    __m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i + 8)));
    acc0 = _mm256_fmadd_ps(k0, _mm256_loadu_ps(q + i), acc0);
    acc1 = _mm256_fmadd_ps(k1, _mm256_loadu_ps(q + i + 8), acc1);
  }
  float s = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += quant::Fp16ToFp32(k[i]) * q[i];
  return s;
}

void AxpyAvx2(int n, float w, const uint16_t* v, float* y) {
  const __m256 wv = _mm256_set1_ps(w);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, x, _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += w * quant::Fp16ToFp32(v[i]);
}

}  // namespace

const F16VecKernels kF16VecAvx2 = {DotAvx2, AxpyAvx2};

}  // namespace ellm::kernels::internal

// AVX2 + F16C versions of activations.h (x86-64-v3, our compile baseline).
// Each is the reference's exact operations on 8 lanes: maxima and products
// round as in scalar code, roundf (ties away from zero) is built from a
// truncation and an exact remainder, and f16 conversions use F16C's
// round-to-nearest-even, which is what quant::Fp32ToFp16 computes.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/activations.h"
#include "quant/fp16.h"

namespace ellm::kernels::internal {
namespace {

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// roundf on 8 lanes: t = trunc(v); v - t is exact; step away from zero when
// it is at least one half.
inline __m256 RoundHalfAway(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 half = _mm256_cmp_ps(Abs(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
  return _mm256_add_ps(t, _mm256_and_ps(half, one));
}

void QuantizeQ8_0(const float* x, quant::BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256 m = _mm256_max_ps(_mm256_max_ps(Abs(v0), Abs(v1)), _mm256_max_ps(Abs(v2), Abs(v3)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = quant::Fp32ToFp16(d);
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i i0 = _mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(v0, vid)));
    const __m256i i1 = _mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(v1, vid)));
    const __m256i i2 = _mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(v2, vid)));
    const __m256i i3 = _mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(v3, vid)));
    // The packs interleave 128-bit lanes; one permutation restores order.
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    const __m256i q = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), q);
  }
}

// quantize_row_q8_K_ref on 8 lanes. The scale comes from the first value
// of largest magnitude (its sign included), found as the first lane equal
// to the maximum of |x|; q = nearest-even(iscale * x), which is ggml's
// nearest_int (|iscale * x| <= ~127, far inside its 2^22 range) and
// _mm256_cvtps_epi32 under the default rounding mode, capped at 127.
void QuantizeQ8_K(const float* x, quant::BlockQ8_K* y, int64_t n) {
  constexpr int kVecs = quant::kQkK / 8;
  for (int64_t b = 0; b < n / quant::kQkK; ++b, x += quant::kQkK) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kVecs; ++k) m = _mm256_max_ps(m, Abs(_mm256_loadu_ps(x + 8 * k)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(y[b]));
      continue;
    }
    float max = 0.0f;
    const __m256 va = _mm256_set1_ps(amax);
    for (int k = 0; k < kVecs; ++k) {
      const __m256 eq = _mm256_cmp_ps(Abs(_mm256_loadu_ps(x + 8 * k)), va, _CMP_EQ_OQ);
      const int bits = _mm256_movemask_ps(eq);
      if (bits != 0) {
        max = x[8 * k + __builtin_ctz(static_cast<unsigned>(bits))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i cap = _mm256_set1_epi32(127);
    for (int k = 0; k < kVecs; k += 4) {
      __m256i i[4];
      for (int u = 0; u < 4; ++u) {
        i[u] = _mm256_min_epi32(
            cap, _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + 8 * (k + u)))));
      }
      // Two groups of 16: sums of the capped values, as the reference sums q.
      for (int g = 0; g < 2; ++g) {
        const __m256i s = _mm256_add_epi32(i[2 * g], i[2 * g + 1]);
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        t = _mm_add_epi32(t, _mm_unpackhi_epi64(t, t));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 1));
        y[b].bsums[k / 2 + g] = static_cast<int16_t>(_mm_cvtsi128_si32(t));
      }
      const __m256i p =
          _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
      const __m256i q = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + 8 * k), q);
    }
    y[b].d = 1.0f / iscale;
  }
}

inline __m256 Gelu8(const uint16_t* table, __m256 g) {
  alignas(16) uint16_t idx[8], val[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(idx),
                  _mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (int k = 0; k < 8; ++k) val[k] = table[idx[k]];
  const __m256 a = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(val)));
  const __m256 lo = _mm256_cmp_ps(g, _mm256_set1_ps(-10.0f), _CMP_LE_OQ);
  const __m256 hi = _mm256_cmp_ps(g, _mm256_set1_ps(10.0f), _CMP_GE_OQ);
  return _mm256_blendv_ps(_mm256_andnot_ps(lo, a), g, hi);
}

void GegluF16Table(const uint16_t* table, const float* gate, const float* up, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = Gelu8(table, _mm256_loadu_ps(gate + i));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(a, _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    float g[8] = {}, u[8] = {}, r[8];
    const int64_t rest = n - i;
    std::memcpy(g, gate + i, rest * sizeof(float));
    std::memcpy(u, up + i, rest * sizeof(float));
    _mm256_storeu_ps(r, _mm256_mul_ps(Gelu8(table, _mm256_loadu_ps(g)), _mm256_loadu_ps(u)));
    std::memcpy(y + i, r, rest * sizeof(float));
  }
}

inline __m256 RoundF16x8(__m256 v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// As quant::Fp32ToBf16 for finite and infinite inputs: add 0x7fff plus the
// kept bit (nearest even), drop the low half.
inline __m256 RoundBf16x8(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
  return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

template <__m256 (*Round)(__m256)>
void RoundRows(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Round(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float buf[8] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    _mm256_storeu_ps(buf, Round(_mm256_loadu_ps(buf)));
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

// Two passes: the maximum over 32 lanes (max is exact, so the order of the
// comparisons does not matter), then the first index holding it. A NaN
// makes VMAXPS's answer depend on the operand order, and may match nothing:
// then the scalar reference decides, so every input gets its answer.
int64_t ArgMax(const float* x, int64_t n) {
  int64_t i = 0;
  float m = x[0];
  if (n >= 32) {
    __m256 m0 = _mm256_loadu_ps(x), m1 = _mm256_loadu_ps(x + 8);
    __m256 m2 = _mm256_loadu_ps(x + 16), m3 = _mm256_loadu_ps(x + 24);
    __m256 nan =
        _mm256_or_ps(_mm256_cmp_ps(m0, m1, _CMP_UNORD_Q), _mm256_cmp_ps(m2, m3, _CMP_UNORD_Q));
    for (i = 32; i + 32 <= n; i += 32) {
      const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
      const __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v0, v1, _CMP_UNORD_Q));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q));
      m0 = _mm256_max_ps(m0, v0);
      m1 = _mm256_max_ps(m1, v1);
      m2 = _mm256_max_ps(m2, v2);
      m3 = _mm256_max_ps(m3, v3);
    }
    const __m256 m01 = _mm256_max_ps(m0, m1), m23 = _mm256_max_ps(m2, m3);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(m01, m23, _CMP_UNORD_Q));
    if (_mm256_movemask_ps(nan) != 0) return std::max_element(x, x + n) - x;
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_max_ps(m01, m23));
    m = *std::max_element(lanes, lanes + 8);
  }
  for (int64_t k = i; k < n; ++k) {
    if (x[k] != x[k]) return std::max_element(x, x + n) - x;
    m = std::max(m, x[k]);
  }
  const __m256 want = _mm256_set1_ps(m);
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + k), want, _CMP_EQ_OQ));
    if (hit != 0) return k + __builtin_ctz(static_cast<unsigned>(hit));
  }
  for (; k < n; ++k) {
    if (x[k] == m) return k;
  }
  return std::max_element(x, x + n) - x;  // unreachable for NaN-free input
}

}  // namespace

const ActivationKernels kActivationsAvx2 = {QuantizeQ8_0,           QuantizeQ8_K,
                                            GegluF16Table,          RoundRows<RoundF16x8>,
                                            RoundRows<RoundBf16x8>, ArgMax};

}  // namespace ellm::kernels::internal

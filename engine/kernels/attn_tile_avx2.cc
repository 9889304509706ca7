// AVX2 + FMA + F16C versions of attn_tile.h (x86-64-v3, our compile
// baseline). Register blocking: Scores keeps a 2-row x 4-key block of
// 8-lane accumulators over the shared dimension; Accumulate keeps 2 rows x
// 32 output columns while streaming keys. Loop orders keep the reused
// operand in L1 (see each function). Exp is Cephes' expf polynomial
// (Moshier, "Methods and Programs for Mathematical Functions") on 8 lanes.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attn_tile.h"

namespace ellm::kernels::internal {
namespace {

// Four 8-lane accumulators -> their four horizontal sums.
inline __m128 Hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

inline float Hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float DotTail(int d0, int dim, const float* a, const float* b) {
  float s = 0.0f;
  for (int d = d0; d < dim; ++d) s += a[d] * b[d];
  return s;
}

// Keys outer, rows inner: the query tile (rows x dim, 32 KiB at 32 x 256)
// stays in L1 while each group of four keys is read from L2 once.
void Scores(int rows, int keys, int dim, const float* q, int64_t qs, const float* k, int64_t ks,
            float* s, int64_t ss) {
  const int dv = dim & ~7;
  int j = 0;
  for (; j + 4 <= keys; j += 4) {
    const float* k0 = k + j * ks;
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
      const float* q0 = q + r * qs;
      const float* q1 = q0 + qs;
      __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
      __m256 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
      for (int d = 0; d < dv; d += 8) {
        const __m256 x0 = _mm256_loadu_ps(q0 + d), x1 = _mm256_loadu_ps(q1 + d);
        __m256 kv = _mm256_loadu_ps(k0 + d);
        a00 = _mm256_fmadd_ps(x0, kv, a00);
        a10 = _mm256_fmadd_ps(x1, kv, a10);
        kv = _mm256_loadu_ps(k0 + ks + d);
        a01 = _mm256_fmadd_ps(x0, kv, a01);
        a11 = _mm256_fmadd_ps(x1, kv, a11);
        kv = _mm256_loadu_ps(k0 + 2 * ks + d);
        a02 = _mm256_fmadd_ps(x0, kv, a02);
        a12 = _mm256_fmadd_ps(x1, kv, a12);
        kv = _mm256_loadu_ps(k0 + 3 * ks + d);
        a03 = _mm256_fmadd_ps(x0, kv, a03);
        a13 = _mm256_fmadd_ps(x1, kv, a13);
      }
      __m128 s0 = Hsum4(a00, a01, a02, a03), s1 = Hsum4(a10, a11, a12, a13);
      if (dv < dim) {
        s0 = _mm_add_ps(
            s0, _mm_setr_ps(DotTail(dv, dim, q0, k0), DotTail(dv, dim, q0, k0 + ks),
                            DotTail(dv, dim, q0, k0 + 2 * ks), DotTail(dv, dim, q0, k0 + 3 * ks)));
        s1 = _mm_add_ps(
            s1, _mm_setr_ps(DotTail(dv, dim, q1, k0), DotTail(dv, dim, q1, k0 + ks),
                            DotTail(dv, dim, q1, k0 + 2 * ks), DotTail(dv, dim, q1, k0 + 3 * ks)));
      }
      _mm_storeu_ps(s + r * ss + j, s0);
      _mm_storeu_ps(s + (r + 1) * ss + j, s1);
    }
    for (; r < rows; ++r) {
      const float* q0 = q + r * qs;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int d = 0; d < dv; d += 8) {
        const __m256 x0 = _mm256_loadu_ps(q0 + d);
        a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(k0 + d), a0);
        a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(k0 + ks + d), a1);
        a2 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(k0 + 2 * ks + d), a2);
        a3 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(k0 + 3 * ks + d), a3);
      }
      __m128 s0 = Hsum4(a0, a1, a2, a3);
      if (dv < dim) {
        s0 = _mm_add_ps(
            s0, _mm_setr_ps(DotTail(dv, dim, q0, k0), DotTail(dv, dim, q0, k0 + ks),
                            DotTail(dv, dim, q0, k0 + 2 * ks), DotTail(dv, dim, q0, k0 + 3 * ks)));
      }
      _mm_storeu_ps(s + r * ss + j, s0);
    }
  }
  if (j < keys) {
    // The last 1-3 keys go through the same 4-key arithmetic (the missing
    // keys repeat the last one and are dropped), so a score never depends
    // on where its key falls in the tile: batched and one-token attention
    // then agree bit for bit.
    const int left = keys - j;
    const float* kq[4];
    for (int i = 0; i < 4; ++i) kq[i] = k + (j + std::min(i, left - 1)) * ks;
    for (int r = 0; r < rows; ++r) {
      const float* q0 = q + r * qs;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int d = 0; d < dv; d += 8) {
        const __m256 x0 = _mm256_loadu_ps(q0 + d);
        a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(kq[0] + d), a0);
        a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(kq[1] + d), a1);
        a2 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(kq[2] + d), a2);
        a3 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(kq[3] + d), a3);
      }
      __m128 s0 = Hsum4(a0, a1, a2, a3);
      if (dv < dim) {
        s0 = _mm_add_ps(s0, _mm_setr_ps(DotTail(dv, dim, q0, kq[0]), DotTail(dv, dim, q0, kq[1]),
                                        DotTail(dv, dim, q0, kq[2]), DotTail(dv, dim, q0, kq[3])));
      }
      float out[4];
      _mm_storeu_ps(out, s0);
      for (int i = 0; i < left; ++i) s[r * ss + j + i] = out[i];
    }
  }
}

// One row's o[d0, d0 + 32) += sum_j p[j] * v[j][...], for one or two rows.
template <int kRows>
inline void Accumulate32(int keys, const float* p, int64_t ps, const float* v, int64_t vs, float* o,
                         int64_t os) {
  __m256 acc[kRows][4];
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm256_loadu_ps(o + r * os + 8 * c);
  }
  for (int j = 0; j < keys; ++j) {
    const float* vj = v + j * vs;
    const __m256 v0 = _mm256_loadu_ps(vj), v1 = _mm256_loadu_ps(vj + 8);
    const __m256 v2 = _mm256_loadu_ps(vj + 16), v3 = _mm256_loadu_ps(vj + 24);
    for (int r = 0; r < kRows; ++r) {
      const __m256 w = _mm256_broadcast_ss(p + r * ps + j);
      acc[r][0] = _mm256_fmadd_ps(w, v0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(w, v1, acc[r][1]);
      acc[r][2] = _mm256_fmadd_ps(w, v2, acc[r][2]);
      acc[r][3] = _mm256_fmadd_ps(w, v3, acc[r][3]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < 4; ++c) _mm256_storeu_ps(o + r * os + 8 * c, acc[r][c]);
  }
}

void Accumulate(int rows, int keys, int dim, const float* p, int64_t ps, const float* v, int64_t vs,
                float* o, int64_t os) {
  // Columns outer, rows inner: one 32-column strip of the value tile (8 KiB
  // at 64 keys) stays in L1 while every row folds it in.
  const int d32 = dim & ~31;
  for (int d = 0; d < d32; d += 32) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
      Accumulate32<2>(keys, p + r * ps, ps, v + d, vs, o + r * os + d, os);
    }
    for (; r < rows; ++r) Accumulate32<1>(keys, p + r * ps, ps, v + d, vs, o + r * os + d, os);
  }
  for (int rr = 0; rr < rows; ++rr) {
    for (int j = 0; j < keys; ++j) {
      const float w = p[rr * ps + j];
      for (int d = d32; d < dim; ++d) o[rr * os + d] += w * v[j * vs + d];
    }
  }
}

// exp on 8 lanes; inputs below -87.3 (where 2^n would be subnormal) give 0.
inline __m256 Exp8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3f);
  const __m256 zero_mask = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(zero_mask, y);
}

// The tail goes through Exp8 too, so exp(x) does not depend on x's index.
void Exp(int64_t n, const float* x, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Exp8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float buf[8] = {};
    std::copy(x + i, x + n, buf);
    _mm256_storeu_ps(buf, Exp8(_mm256_loadu_ps(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

void F16ToF32(int64_t n, const uint16_t* src, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

void Bf16ToF32(int64_t n, const uint16_t* src, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) {
    const __m128i w = _mm_cvtsi32_si128(static_cast<int>(uint32_t{src[i]} << 16));
    dst[i] = _mm_cvtss_f32(_mm_castsi128_ps(w));
  }
}

}  // namespace

const AttnTileKernels kAttnTileAvx2 = {Scores, Accumulate, Exp, F16ToF32, Bf16ToF32};

}  // namespace ellm::kernels::internal

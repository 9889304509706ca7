// AVX2 + FMA + F16C versions of attn_tile.h (x86-64-v3, our compile
// baseline). Register blocking: Scores keeps a 4-row x 3-key block of
// 8-lane accumulators over the shared dimension; Accumulate keeps 6 rows x
// 16 output columns while streaming keys. Loop orders keep the reused
// operand in L1 (see each function). Exp is Cephes' expf polynomial
// (Moshier, "Methods and Programs for Mathematical Functions") on 8 lanes.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attn_tile.h"
#include "kernels/bf16_pairs.h"
#include "kernels/flush_denormals.h"
#include "kernels/spread_prefetch.h"
#include "quant/fp16.h"
#include "quant/q8_0.h"

namespace ellm::kernels::internal {
namespace {

// Four 8-lane accumulators -> their four horizontal sums.
inline __m128 Hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// How Scores and Accumulate read K and V: f32 as is, or 16-bit halves
// widened in registers (exact, so the arithmetic after the load is the same
// as on rows converted to f32 beforehand, bit for bit).
struct F32Rows {
  using T = float;
  static __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
  static float Load1(const float* p) { return *p; }
};
struct Bf16Rows {
  using T = uint16_t;
  static __m256 Load8(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static float Load1(const uint16_t* p) {
    const __m128i w = _mm_cvtsi32_si128(static_cast<int>(uint32_t{*p} << 16));
    return _mm_cvtss_f32(_mm_castsi128_ps(w));
  }
};
struct F16Rows {
  using T = uint16_t;
  static __m256 Load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float Load1(const uint16_t* p) { return _cvtsh_ss(*p); }
};

template <class L>
float DotTail(int d0, int dim, const float* a, const typename L::T* b) {
  float s = 0.0f;
  for (int d = d0; d < dim; ++d) s = std::fma(a[d], L::Load1(b + d), s);
  return s;
}

// Scores: 4 rows x 3 keys of 8-lane accumulators (12 registers, the three
// key vectors and one query vector make 16) over the shared dimension, then
// one Hsum4 tree per score. Rows are taken in chunks of kScoreRowChunk (16
// KiB of queries at 256 dims) so the chunk and the three key rows stay in
// L1 while the key tile streams from L2 once per chunk.
constexpr int kScoreRowChunk = 16;

// Lanes [0, nk) set, for _mm_maskstore_ps (nk <= 4).
inline __m128i NkMask(int nk) {
  return _mm_cmpgt_epi32(_mm_set1_epi32(nk), _mm_setr_epi32(0, 1, 2, 3));
}

// s[r][c] for r < 4, c < nk; k2/k1 repeat the last key when nk < 3.
template <class L, class T = typename L::T>
inline void ScoreBlock4x3(int dim, int dv, const float* q, int64_t qs, const T* k0, const T* k1,
                          const T* k2, float* s, int64_t ss, int nk) {
  const float *q0 = q, *q1 = q + qs, *q2 = q + 2 * qs, *q3 = q + 3 * qs;
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a10 = a00, a11 = a00, a12 = a00;
  __m256 a20 = a00, a21 = a00, a22 = a00, a30 = a00, a31 = a00, a32 = a00;
  for (int d = 0; d < dv; d += 8) {
    const __m256 b0 = L::Load8(k0 + d), b1 = L::Load8(k1 + d), b2 = L::Load8(k2 + d);
    __m256 x = _mm256_loadu_ps(q0 + d);
    a00 = _mm256_fmadd_ps(x, b0, a00);
    a01 = _mm256_fmadd_ps(x, b1, a01);
    a02 = _mm256_fmadd_ps(x, b2, a02);
    x = _mm256_loadu_ps(q1 + d);
    a10 = _mm256_fmadd_ps(x, b0, a10);
    a11 = _mm256_fmadd_ps(x, b1, a11);
    a12 = _mm256_fmadd_ps(x, b2, a12);
    x = _mm256_loadu_ps(q2 + d);
    a20 = _mm256_fmadd_ps(x, b0, a20);
    a21 = _mm256_fmadd_ps(x, b1, a21);
    a22 = _mm256_fmadd_ps(x, b2, a22);
    x = _mm256_loadu_ps(q3 + d);
    a30 = _mm256_fmadd_ps(x, b0, a30);
    a31 = _mm256_fmadd_ps(x, b1, a31);
    a32 = _mm256_fmadd_ps(x, b2, a32);
  }
  if (dv == dim) {  // no tail: each row's nk scores go straight out
    const __m128i m = NkMask(nk);
    _mm_maskstore_ps(s, m, Hsum4(a00, a01, a02, a02));
    _mm_maskstore_ps(s + ss, m, Hsum4(a10, a11, a12, a12));
    _mm_maskstore_ps(s + 2 * ss, m, Hsum4(a20, a21, a22, a22));
    _mm_maskstore_ps(s + 3 * ss, m, Hsum4(a30, a31, a32, a32));
    return;
  }
  float out[4][4];
  _mm_storeu_ps(out[0], Hsum4(a00, a01, a02, a02));
  _mm_storeu_ps(out[1], Hsum4(a10, a11, a12, a12));
  _mm_storeu_ps(out[2], Hsum4(a20, a21, a22, a22));
  _mm_storeu_ps(out[3], Hsum4(a30, a31, a32, a32));
  const T* kk[3] = {k0, k1, k2};
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < nk; ++c) {
      float v = out[r][c];
      if (dv < dim) v += DotTail<L>(dv, dim, q + r * qs, kk[c]);
      s[r * ss + c] = v;
    }
  }
}

// The same arithmetic for four rows and one key (a tile's last key when the
// count is 1 mod 3): Hsum4's lane 0 is the same tree whatever the other
// arguments, so the score equals the one ScoreBlock4x3 computes.
template <class L, class T = typename L::T>
inline void ScoreBlock4x1(int dim, int dv, const float* q, int64_t qs, const T* k0, float* s,
                          int64_t ss) {
  const float *q0 = q, *q1 = q + qs, *q2 = q + 2 * qs, *q3 = q + 3 * qs;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int d = 0; d < dv; d += 8) {
    const __m256 b0 = L::Load8(k0 + d);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q0 + d), b0, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q1 + d), b0, a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q2 + d), b0, a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q3 + d), b0, a3);
  }
  const __m256 acc[4] = {a0, a1, a2, a3};
  for (int r = 0; r < 4; ++r) {
    float v = _mm_cvtss_f32(Hsum4(acc[r], acc[r], acc[r], acc[r]));
    if (dv < dim) v += DotTail<L>(dv, dim, q + r * qs, k0);
    s[r * ss] = v;
  }
}

// The same arithmetic for one row.
template <class L, class T = typename L::T>
inline void ScoreBlock1x3(int dim, int dv, const float* q0, const T* k0, const T* k1, const T* k2,
                          float* s, int nk) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0;
  for (int d = 0; d < dv; d += 8) {
    const __m256 x = _mm256_loadu_ps(q0 + d);
    a0 = _mm256_fmadd_ps(x, L::Load8(k0 + d), a0);
    a1 = _mm256_fmadd_ps(x, L::Load8(k1 + d), a1);
    a2 = _mm256_fmadd_ps(x, L::Load8(k2 + d), a2);
  }
  float out[4];
  _mm_storeu_ps(out, Hsum4(a0, a1, a2, a2));
  const T* kk[3] = {k0, k1, k2};
  for (int c = 0; c < nk; ++c) {
    float v = out[c];
    if (dv < dim) v += DotTail<L>(dv, dim, q0, kk[c]);
    s[c] = v;
  }
}

// Every score is one 8-lane FMA chain over d in order and one Hsum4 tree,
// whatever the block, chunk or tile: a score never depends on where its row
// or key falls, so batched and one-token attention agree bit for bit.
template <class L, class T = typename L::T>
void ScoresPf(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
              float* s, int64_t ss, const void* prefetch, int64_t prefetch_bytes) {
  const int dv = dim & ~7;
  // One step per block of keys and rows.
  SpreadPrefetch pf(prefetch, prefetch_bytes, int64_t{(keys + 2) / 3} * (rows / 4 + rows % 4));
  for (int r0 = 0; r0 < rows; r0 += kScoreRowChunk) {
    const int r1 = std::min(rows, r0 + kScoreRowChunk);
    for (int j = 0; j < keys; j += 3) {
      const int nk = std::min(3, keys - j);
      const T* k0 = k + j * ks;
      const T* k1 = k + (j + std::min(1, nk - 1)) * ks;
      const T* k2 = k + (j + std::min(2, nk - 1)) * ks;
      int r = r0;
      if (nk == 1) {
        for (; r + 4 <= r1; r += 4) {
          pf.Step();
          ScoreBlock4x1<L>(dim, dv, q + r * qs, qs, k0, s + r * ss + j, ss);
        }
      }
      for (; r + 4 <= r1; r += 4) {
        pf.Step();
        ScoreBlock4x3<L>(dim, dv, q + r * qs, qs, k0, k1, k2, s + r * ss + j, ss, nk);
      }
      for (; r < r1; ++r) {
        pf.Step();
        ScoreBlock1x3<L>(dim, dv, q + r * qs, k0, k1, k2, s + r * ss + j, nk);
      }
    }
  }
  pf.Finish();
}

template <class L, class T = typename L::T>
void Scores(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
            float* s, int64_t ss) {
  ScoresPf<L>(rows, keys, dim, q, qs, k, ks, s, ss, nullptr, 0);
}

// ---- ScoresBf16: bf16 pair dot products (attn_tile.h) ----
// VDPBF16PS emulated on 8 lanes: a 256-bit load of 16 bf16 values holds
// lane i's pair (c + 2i, c + 2i + 1); the odd element is the lane's top
// half as it stands, the even one shifted up. Each product of two bf16
// values is exact in f32, so fma(odd) then fma(even) is the instruction's
// two roundings, and FlushDenormalsScope supplies its DAZ and FTZ.
inline __m256 OddHalves(__m256i x) {
  return _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline __m256 EvenHalves(__m256i x) { return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)); }
inline __m256i Load16Bf16(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Query rows of a chunk as bf16 (their top halves), `pitch` values apart;
// the same packing the AVX-512 kernel uses for its row pairs.
constexpr int kBf16MaxDim = 512;  // wider heads go to the reference (same bits)

float TailBf16(int d0, int dim, const uint16_t* qb, const uint16_t* k) {
  float t = 0.0f;  // flushed by the caller's FlushDenormalsScope
  for (int d = d0; d < dim; ++d) {
    t = std::fma(
        _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(uint32_t{qb[d]} << 16)))),
        _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(uint32_t{k[d]} << 16)))),
        t);
  }
  return t;
}

// s[r][c] for R rows (qb rows `pitch` apart) and keys k0, k1 (k1 == k0
// when nk == 1): 2R accumulators, two odd/even key pairs, one query pair.
template <int R>
inline void Bf16Block(int dim, int d16, const uint16_t* qb, int pitch, const uint16_t* k0,
                      const uint16_t* k1, float* s, int64_t ss, int nk) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  for (int d = 0; d < d16; d += 16) {
    const __m256i x0 = Load16Bf16(k0 + d), x1 = Load16Bf16(k1 + d);
    const __m256 o0 = OddHalves(x0), e0 = EvenHalves(x0), o1 = OddHalves(x1), e1 = EvenHalves(x1);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i y = Load16Bf16(qb + r * pitch + d);
      const __m256 qo = OddHalves(y), qe = EvenHalves(y);
      a0[r] = _mm256_fmadd_ps(qe, e0, _mm256_fmadd_ps(qo, o0, a0[r]));
      a1[r] = _mm256_fmadd_ps(qe, e1, _mm256_fmadd_ps(qo, o1, a1[r]));
    }
  }
  const uint16_t* kk[2] = {k0, k1};
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float out[4];
    _mm_storeu_ps(out, Hsum4(a0[r], a1[r], a1[r], a1[r]));
    for (int c = 0; c < nk; ++c) {
      float v = out[c];
      if (d16 < dim) v += TailBf16(d16, dim, qb + r * pitch, kk[c]);
      s[r * ss + c] = v;
    }
  }
}

void ScoresBf16(int rows, int keys, int dim, const float* q, int64_t qs, const uint16_t* k,
                int64_t ks, float* s, int64_t ss, const void* prefetch, int64_t prefetch_bytes) {
  if (dim > kBf16MaxDim) {
    kAttnTileRef.scores_bf16(rows, keys, dim, q, qs, k, ks, s, ss, prefetch, prefetch_bytes);
    return;
  }
  const FlushDenormalsScope flush;
  const int d16 = dim & ~15;
  SpreadPrefetch pf(prefetch, prefetch_bytes, int64_t{(keys + 1) / 2} * (rows / 4 + rows % 4));
  alignas(32) uint16_t qb[kScoreRowChunk * kBf16MaxDim];
  for (int r0 = 0; r0 < rows; r0 += kScoreRowChunk) {
    const int r1 = std::min(rows, r0 + kScoreRowChunk);
    for (int r = r0; r < r1; ++r) {
      const float* src = q + r * qs;
      uint16_t* dst = qb + (r - r0) * dim;
      for (int d = 0; d < dim; ++d) {
        uint32_t bits;
        std::memcpy(&bits, src + d, 4);
        dst[d] = static_cast<uint16_t>(bits >> 16);
      }
    }
    for (int j = 0; j < keys; j += 2) {
      const int nk = std::min(2, keys - j);
      const uint16_t* k0 = k + j * ks;
      const uint16_t* k1 = k + (j + nk - 1) * ks;
      int r = r0;
      for (; r + 4 <= r1; r += 4) {
        pf.Step();
        Bf16Block<4>(dim, d16, qb + (r - r0) * dim, dim, k0, k1, s + r * ss + j, ss, nk);
      }
      for (; r < r1; ++r) {
        pf.Step();
        Bf16Block<1>(dim, d16, qb + (r - r0) * dim, dim, k0, k1, s + r * ss + j, ss, nk);
      }
    }
  }
  pf.Finish();
}

// ---- InterleaveBf16Pairs, AccumulateBf16Pairs (attn_tile.h) ----

void InterleaveBf16Pairs(int keys, int dim, const uint16_t* v, int64_t vs, uint32_t* vp,
                         const void* prefetch, int64_t prefetch_bytes) {
  const int d16 = dim & ~15;
  SpreadPrefetch pf(prefetch, prefetch_bytes, int64_t{(keys + 1) / 2} * std::max(1, d16 / 16));
  for (int m = 0; 2 * m < keys; ++m) {
    const uint16_t* a = v + 2 * m * vs;
    const bool odd = 2 * m + 1 < keys;
    const uint16_t* b = odd ? a + vs : nullptr;
    uint32_t* out = vp + int64_t{m} * dim;
    int d = 0;
    for (; d < d16; d += 16) {
      pf.Step();
      const __m256i x = Load16Bf16(a + d);
      const __m256i y = odd ? Load16Bf16(b + d) : _mm256_setzero_si256();
      // Per 128-bit lane: lo = pairs of values 0-3 (and 8-11), hi = 4-7 (12-15).
      const __m256i lo = _mm256_unpacklo_epi16(x, y), hi = _mm256_unpackhi_epi16(x, y);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + d),
                          _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + d + 8),
                          _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    for (; d < dim; ++d) out[d] = a[d] | (odd ? uint32_t{b[d]} << 16 : 0u);
  }
  pf.Finish();
}

// One output element's chain in scalar (the columns past the last multiple
// of 8), under the caller's FlushDenormalsScope.
inline float PairChainTail(int keys, int dim, const uint32_t* wp, const uint32_t* vp, int d,
                           float acc) {
  auto top = [](uint32_t x) {
    return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(x & 0xFFFF0000u))));
  };
  for (int m = 0; 2 * m < keys; ++m) {
    const uint32_t v = vp[int64_t{m} * dim + d], w = wp[m];
    acc = std::fma(top(w), top(v), acc);
    acc = std::fma(top(w << 16), top(v << 16), acc);
  }
  return acc;
}

// o[r][d0, d0 + 8W) for R rows: each lane one chain over the key pairs.
template <int R, int W>
inline void PairBlock(int pairs, int dim, const uint32_t* wp, int wps, const uint32_t* vp, float* o,
                      int64_t os) {
  __m256 acc[R][W];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) acc[r][w] = _mm256_loadu_ps(o + r * os + 8 * w);
  }
  for (int m = 0; m < pairs; ++m) {
    __m256 xo[W], xe[W];
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) {
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vp + int64_t{m} * dim + 8 * w));
      xo[w] = OddHalves(x);
      xe[w] = EvenHalves(x);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i wt = _mm256_set1_epi32(static_cast<int>(wp[r * wps + m]));
      const __m256 wo = OddHalves(wt), we = EvenHalves(wt);
#pragma GCC unroll 2
      for (int w = 0; w < W; ++w)
        acc[r][w] = _mm256_fmadd_ps(we, xe[w], _mm256_fmadd_ps(wo, xo[w], acc[r][w]));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) _mm256_storeu_ps(o + r * os + 8 * w, acc[r][w]);
  }
}

// Weight pairs per row for up to this many keys (a tile's 64); longer key
// ranges are taken in pieces of it (a chain continues across pieces).
constexpr int kPairKeys = 64;

void AccumulateBf16Pairs(int rows, int keys, int dim, const float* p, int64_t ps,
                         const uint32_t* vp, float* o, int64_t os) {
  const FlushDenormalsScope flush;
  const int d16 = dim & ~15, d8 = dim & ~7;
  alignas(32) uint32_t wp[4 * kPairKeys / 2];
  for (int j0 = 0; j0 < keys; j0 += kPairKeys) {
    const int nk = std::min(kPairKeys, keys - j0), pairs = (nk + 1) / 2;
    const uint32_t* vj = vp + int64_t{j0 / 2} * dim;
    int r = 0;
    for (; r < rows; r += 4) {
      const int n = std::min(4, rows - r);
      for (int i = 0; i < n; ++i) {
        for (int m = 0; m < pairs; ++m)
          wp[i * pairs + m] = WeightPair(p + (r + i) * ps + j0, m, nk);
      }
      float* orow = o + r * os;  // denormal o values read as zeros (DAZ)
      for (int d = 0; d < d16; d += 16) {
        if (n == 4) {
          PairBlock<4, 2>(pairs, dim, wp, pairs, vj + d, orow + d, os);
        } else {
          for (int i = 0; i < n; ++i)
            PairBlock<1, 2>(pairs, dim, wp + i * pairs, pairs, vj + d, orow + i * os + d, os);
        }
      }
      if (d8 > d16) {
        for (int i = 0; i < n; ++i)
          PairBlock<1, 1>(pairs, dim, wp + i * pairs, pairs, vj + d16, orow + i * os + d16, os);
      }
      for (int i = 0; i < n; ++i) {
        for (int d = d8; d < dim; ++d) {
          orow[i * os + d] = PairChainTail(nk, dim, wp + i * pairs, vj, d, orow[i * os + d]);
        }
      }
    }
  }
}

// o[r][d0, d0 + 16) += sum_j p[r][j] * v[j][d0 + ...] for six rows: 12
// accumulators, the two value vectors of key j and one broadcast weight in
// registers (written out: as an array GCC keeps them on the stack).
template <class L, class T = typename L::T>
inline void Accumulate16x6(int keys, const float* p, int64_t ps, const T* v, int64_t vs, float* o,
                           int64_t os) {
  float *o0 = o, *o1 = o + os, *o2 = o + 2 * os, *o3 = o + 3 * os, *o4 = o + 4 * os;
  float* o5 = o + 5 * os;
  const float *p0 = p, *p1 = p + ps, *p2 = p + 2 * ps, *p3 = p + 3 * ps, *p4 = p + 4 * ps;
  const float* p5 = p + 5 * ps;
  __m256 a00 = _mm256_loadu_ps(o0), a01 = _mm256_loadu_ps(o0 + 8);
  __m256 a10 = _mm256_loadu_ps(o1), a11 = _mm256_loadu_ps(o1 + 8);
  __m256 a20 = _mm256_loadu_ps(o2), a21 = _mm256_loadu_ps(o2 + 8);
  __m256 a30 = _mm256_loadu_ps(o3), a31 = _mm256_loadu_ps(o3 + 8);
  __m256 a40 = _mm256_loadu_ps(o4), a41 = _mm256_loadu_ps(o4 + 8);
  __m256 a50 = _mm256_loadu_ps(o5), a51 = _mm256_loadu_ps(o5 + 8);
  for (int j = 0; j < keys; ++j) {
    const __m256 v0 = L::Load8(v + j * vs), v1 = L::Load8(v + j * vs + 8);
    __m256 w = _mm256_broadcast_ss(p0 + j);
    a00 = _mm256_fmadd_ps(w, v0, a00);
    a01 = _mm256_fmadd_ps(w, v1, a01);
    w = _mm256_broadcast_ss(p1 + j);
    a10 = _mm256_fmadd_ps(w, v0, a10);
    a11 = _mm256_fmadd_ps(w, v1, a11);
    w = _mm256_broadcast_ss(p2 + j);
    a20 = _mm256_fmadd_ps(w, v0, a20);
    a21 = _mm256_fmadd_ps(w, v1, a21);
    w = _mm256_broadcast_ss(p3 + j);
    a30 = _mm256_fmadd_ps(w, v0, a30);
    a31 = _mm256_fmadd_ps(w, v1, a31);
    w = _mm256_broadcast_ss(p4 + j);
    a40 = _mm256_fmadd_ps(w, v0, a40);
    a41 = _mm256_fmadd_ps(w, v1, a41);
    w = _mm256_broadcast_ss(p5 + j);
    a50 = _mm256_fmadd_ps(w, v0, a50);
    a51 = _mm256_fmadd_ps(w, v1, a51);
  }
  _mm256_storeu_ps(o0, a00);
  _mm256_storeu_ps(o0 + 8, a01);
  _mm256_storeu_ps(o1, a10);
  _mm256_storeu_ps(o1 + 8, a11);
  _mm256_storeu_ps(o2, a20);
  _mm256_storeu_ps(o2 + 8, a21);
  _mm256_storeu_ps(o3, a30);
  _mm256_storeu_ps(o3 + 8, a31);
  _mm256_storeu_ps(o4, a40);
  _mm256_storeu_ps(o4 + 8, a41);
  _mm256_storeu_ps(o5, a50);
  _mm256_storeu_ps(o5 + 8, a51);
}

// The same for four rows (decode: one token of a group of four query heads).
template <class L, class T = typename L::T>
inline void Accumulate16x4(int keys, const float* p, int64_t ps, const T* v, int64_t vs, float* o,
                           int64_t os) {
  float *o0 = o, *o1 = o + os, *o2 = o + 2 * os, *o3 = o + 3 * os;
  const float *p0 = p, *p1 = p + ps, *p2 = p + 2 * ps, *p3 = p + 3 * ps;
  __m256 a00 = _mm256_loadu_ps(o0), a01 = _mm256_loadu_ps(o0 + 8);
  __m256 a10 = _mm256_loadu_ps(o1), a11 = _mm256_loadu_ps(o1 + 8);
  __m256 a20 = _mm256_loadu_ps(o2), a21 = _mm256_loadu_ps(o2 + 8);
  __m256 a30 = _mm256_loadu_ps(o3), a31 = _mm256_loadu_ps(o3 + 8);
  for (int j = 0; j < keys; ++j) {
    const __m256 v0 = L::Load8(v + j * vs), v1 = L::Load8(v + j * vs + 8);
    __m256 w = _mm256_broadcast_ss(p0 + j);
    a00 = _mm256_fmadd_ps(w, v0, a00);
    a01 = _mm256_fmadd_ps(w, v1, a01);
    w = _mm256_broadcast_ss(p1 + j);
    a10 = _mm256_fmadd_ps(w, v0, a10);
    a11 = _mm256_fmadd_ps(w, v1, a11);
    w = _mm256_broadcast_ss(p2 + j);
    a20 = _mm256_fmadd_ps(w, v0, a20);
    a21 = _mm256_fmadd_ps(w, v1, a21);
    w = _mm256_broadcast_ss(p3 + j);
    a30 = _mm256_fmadd_ps(w, v0, a30);
    a31 = _mm256_fmadd_ps(w, v1, a31);
  }
  _mm256_storeu_ps(o0, a00);
  _mm256_storeu_ps(o0 + 8, a01);
  _mm256_storeu_ps(o1, a10);
  _mm256_storeu_ps(o1 + 8, a11);
  _mm256_storeu_ps(o2, a20);
  _mm256_storeu_ps(o2 + 8, a21);
  _mm256_storeu_ps(o3, a30);
  _mm256_storeu_ps(o3 + 8, a31);
}

// The same for the last 1-3 rows, two at a time.
template <class L, class T = typename L::T>
inline void Accumulate16x2(int rows, int keys, const float* p, int64_t ps, const T* v, int64_t vs,
                           float* o, int64_t os) {
  const float* p1 = rows > 1 ? p + ps : p;
  float* o1 = rows > 1 ? o + os : nullptr;
  __m256 a00 = _mm256_loadu_ps(o), a01 = _mm256_loadu_ps(o + 8);
  __m256 a10 = _mm256_setzero_ps(), a11 = a10;
  if (o1 != nullptr) {
    a10 = _mm256_loadu_ps(o1);
    a11 = _mm256_loadu_ps(o1 + 8);
  }
  for (int j = 0; j < keys; ++j) {
    const __m256 v0 = L::Load8(v + j * vs), v1 = L::Load8(v + j * vs + 8);
    __m256 w = _mm256_broadcast_ss(p + j);
    a00 = _mm256_fmadd_ps(w, v0, a00);
    a01 = _mm256_fmadd_ps(w, v1, a01);
    w = _mm256_broadcast_ss(p1 + j);
    a10 = _mm256_fmadd_ps(w, v0, a10);
    a11 = _mm256_fmadd_ps(w, v1, a11);
  }
  _mm256_storeu_ps(o, a00);
  _mm256_storeu_ps(o + 8, a01);
  if (o1 != nullptr) {
    _mm256_storeu_ps(o1, a10);
    _mm256_storeu_ps(o1 + 8, a11);
  }
}

constexpr int kAccumulateKeyBlock = 64;

template <class L, class T = typename L::T>
void AccumulatePf(int rows, int keys, int dim, const float* p, int64_t ps, const T* v, int64_t vs,
                  float* o, int64_t os, const void* prefetch, int64_t prefetch_bytes) {
  // Keys in blocks of kAccumulateKeyBlock (a whole key tile of
  // model/attention.cc: one load and store of the accumulators per 64 keys;
  // a strip of the block is 4 KiB and stays in L1 across the row blocks),
  // then 16-column strips, then blocks of six rows. Each output element
  // still adds its keys one by one in order: the blocking never changes a
  // sum. (64 measured ~5% faster than 32 in isolation, 48 x 64 x 256.)
  const int d16 = dim & ~15;
  // One step per block of rows of a strip.
  const int row_blocks = rows / 6 + (rows % 6 >= 4) + (rows % 6 % 4 + 1) / 2;
  SpreadPrefetch pf(
      prefetch, prefetch_bytes,
      int64_t{(keys + kAccumulateKeyBlock - 1) / kAccumulateKeyBlock} * (d16 / 16) * row_blocks);
  for (int j0 = 0; j0 < keys; j0 += kAccumulateKeyBlock) {
    const int nj = std::min(kAccumulateKeyBlock, keys - j0);
    const float* pj = p + j0;
    for (int d = 0; d < d16; d += 16) {
      const T* vd = v + j0 * vs + d;
      int r = 0;
      for (; r + 6 <= rows; r += 6) {
        pf.Step();
        Accumulate16x6<L>(nj, pj + r * ps, ps, vd, vs, o + r * os + d, os);
      }
      if (r + 4 <= rows) {
        pf.Step();
        Accumulate16x4<L>(nj, pj + r * ps, ps, vd, vs, o + r * os + d, os);
        r += 4;
      }
      for (; r < rows; r += 2) {
        pf.Step();
        Accumulate16x2<L>(std::min(2, rows - r), nj, pj + r * ps, ps, vd, vs, o + r * os + d, os);
      }
    }
  }
  pf.Finish();
  for (int rr = 0; rr < rows; ++rr) {
    for (int j = 0; j < keys; ++j) {
      const float w = p[rr * ps + j];
      for (int d = d16; d < dim; ++d) {
        o[rr * os + d] = std::fma(w, L::Load1(v + j * vs + d), o[rr * os + d]);
      }
    }
  }
}

template <class L, class T = typename L::T>
void Accumulate(int rows, int keys, int dim, const float* p, int64_t ps, const T* v, int64_t vs,
                float* o, int64_t os) {
  AccumulatePf<L>(rows, keys, dim, p, ps, v, vs, o, os, nullptr, 0);
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

// q * d per block: the int8 -> f32 conversion is exact and the product is
// the reference's one rounding, so the values equal DequantizeQ8_0's.
void Q8_0ToF32(int64_t n, const uint8_t* src, float* dst) {
  const auto* x = reinterpret_cast<const quant::BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / 32; ++b, dst += 32) {
    const __m256 d = _mm256_set1_ps(quant::Fp16ToFp32(x[b].d));
    for (int k = 0; k < 4; ++k) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[b].qs + 8 * k));
      const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
      _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(q, d));
    }
  }
}

}  // namespace

const AttnTileKernels kAttnTileAvx2 = {Scores<F32Rows>,
                                       Accumulate<F32Rows>,
                                       Exp,
                                       F16ToF32,
                                       Bf16ToF32,
                                       ScoresPf<F16Rows>,
                                       AccumulatePf<F16Rows>,
                                       ScoresBf16,
                                       AccumulatePf<Bf16Rows>,
                                       Q8_0ToF32,
                                       InterleaveBf16Pairs,
                                       AccumulateBf16Pairs,
                                       ScoresPf<Bf16Rows>,
                                       nullptr,   // the tile products: the references',
                                       nullptr};  // put in by GetAttnTileAt

}  // namespace ellm::kernels::internal

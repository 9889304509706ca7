// AVX-512 versions of attn_tile.h's Scores and Accumulate (F, BW, DQ, VL;
// the rest of the table stays AVX2). They compute every output with exactly
// the AVX2 kernels' operations, so the two levels agree bit for bit and a
// result never depends on the machine's vector width:
//   Scores: each score is one 8-lane FMA chain over d in order and one
//     Hsum4 tree (attn_tile_avx2.cc). Here a ZMM holds two such chains, the
//     same key against two query rows (rows in the halves, the key's 8
//     values duplicated), so one FMA advances two scores; the halves are
//     reduced with the same Hsum4 tree.
//   Accumulate: each output element is one FMA chain over keys in order;
//     here 16 elements per register instead of 8.
#include "kernels/attn_tile.h"

#include "kernels/avx512_intrin.h"

#if defined(ELLM_AVX512_KERNELS)

#include <algorithm>
#include <cmath>

namespace ellm::kernels::internal {
namespace {

// The AVX2 file's reduction: four 8-lane accumulators -> four sums.
inline __m128 Hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}
inline __m256 Lo(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 Hi(__m512 v) { return _mm512_extractf32x8_ps(v, 1); }

// How K and V are read: 8 values duplicated into both halves (Dup8) or 16
// values (Load16), widened from 16-bit halves where stored so (exact).
struct F32Rows {
  using T = float;
  static __m512 Dup8(const float* p) { return _mm512_broadcast_f32x8(_mm256_loadu_ps(p)); }
  static __m512 Load16(const float* p) { return _mm512_loadu_ps(p); }
  static float Load1(const float* p) { return *p; }
};
struct F16Rows {
  using T = uint16_t;
  static __m512 Dup8(const uint16_t* p) {
    return _mm512_cvtph_ps(
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static __m512 Load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static float Load1(const uint16_t* p) { return _cvtsh_ss(*p); }
};
struct Bf16Rows {
  using T = uint16_t;
  static __m512 Widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 Dup8(const uint16_t* p) {
    return Widen(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static __m512 Load16(const uint16_t* p) {
    return Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static float Load1(const uint16_t* p) {
    const __m128i w = _mm_cvtsi32_si128(static_cast<int>(uint32_t{*p} << 16));
    return _mm_cvtss_f32(_mm_castsi128_ps(w));
  }
};

template <class L>
float DotTail(int d0, int dim, const float* a, const typename L::T* b) {
  float s = 0.0f;
  for (int d = d0; d < dim; ++d) s = std::fma(a[d], L::Load1(b + d), s);
  return s;
}

// ---- Scores ----

// Query rows per chunk, as in the AVX2 file: the chunk and the key rows of a
// block stay in L1 while the key tile streams from L2 once per chunk.
constexpr int kScoreRowChunk = 16;
constexpr int kScoreKeys = 4;  // keys per register block

// Query rows of a chunk, packed in pairs so that one aligned load gives a
// pair's 8 values at d: pair i at qp + i * 2 * dv, d at + 2 * d, row a's
// values then row b's. Up to this many dimensions; wider heads load each
// row's half and join them (the same values, one shuffle more).
constexpr int kPackedQMaxDim = 512;

// Scores of P row pairs x 4 keys (P * 4 accumulators): q[2i] and q[2i + 1]
// are pair i's rows (equal when a lone row fills a pair; `rows` says how
// many of the 2P are real), qp their packed pairs (null: not packed),
// kk[0..3] the keys (the last repeated when fewer than nk = 4 are real).
// s[r * ss + c] for real rows r and c < nk.
template <class L, int P, class T = typename L::T>
inline void ScoreBlock(int dim, int dv, const float* const* q, const float* qp, const T* const* kk,
                       float* s, int64_t ss, int rows, int nk) {
  __m512 acc[P][kScoreKeys];
#pragma GCC unroll 16
  for (int i = 0; i < P; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  for (int d = 0; d < dv; d += 8) {
    __m512 b[kScoreKeys];
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) b[c] = L::Dup8(kk[c] + d);
#pragma GCC unroll 16
    for (int i = 0; i < P; ++i) {
      const __m512 x =
          qp != nullptr ? _mm512_load_ps(qp + i * 2 * dv + 2 * d)
                        : _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(q[2 * i] + d)),
                                             _mm256_loadu_ps(q[2 * i + 1] + d), 1);
#pragma GCC unroll 4
      for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_fmadd_ps(x, b[c], acc[i][c]);
    }
  }
  const __mmask8 m = static_cast<__mmask8>((1u << nk) - 1);
#pragma GCC unroll 16
  for (int i = 0; i < P; ++i) {
    __m128 h[2] = {Hsum4(Lo(acc[i][0]), Lo(acc[i][1]), Lo(acc[i][2]), Lo(acc[i][3])),
                   Hsum4(Hi(acc[i][0]), Hi(acc[i][1]), Hi(acc[i][2]), Hi(acc[i][3]))};
    for (int half = 0; half < 2; ++half) {
      const int r = 2 * i + half;
      if (r >= rows) break;
      if (dv == dim) {
        _mm_mask_storeu_ps(s + r * ss, m, h[half]);
        continue;
      }
      float out[4];
      _mm_storeu_ps(out, h[half]);
      for (int c = 0; c < nk; ++c) s[r * ss + c] = out[c] + DotTail<L>(dv, dim, q[r], kk[c]);
    }
  }
}

template <class L, class T = typename L::T>
void Scores(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
            float* s, int64_t ss) {
  const int dv = dim & ~7;
  const bool pack = dv <= kPackedQMaxDim;
  alignas(64) float packed[kScoreRowChunk * kPackedQMaxDim];
  for (int r0 = 0; r0 < rows; r0 += kScoreRowChunk) {
    const int r1 = std::min(rows, r0 + kScoreRowChunk);
    if (pack) {
      for (int i = 0; 2 * i < r1 - r0; ++i) {
        const float* a = q + (r0 + 2 * i) * qs;
        const float* b = q + std::min(r0 + 2 * i + 1, r1 - 1) * qs;
        float* out = packed + i * 2 * dv;
        for (int d = 0; d < dv; d += 8) {
          _mm256_store_ps(out + 2 * d, _mm256_loadu_ps(a + d));
          _mm256_store_ps(out + 2 * d + 8, _mm256_loadu_ps(b + d));
        }
      }
    }
    for (int j = 0; j < keys; j += kScoreKeys) {
      const int nk = std::min(kScoreKeys, keys - j);
      const T* kk[kScoreKeys];
      for (int c = 0; c < kScoreKeys; ++c) kk[c] = k + (j + std::min(c, nk - 1)) * ks;
      for (int r = r0; r < r1; r += 8) {
        const int n = std::min(8, r1 - r);
        const float* qq[8];
        for (int i = 0; i < 8; ++i) qq[i] = q + (r + std::min(i, n - 1)) * qs;
        const float* qp = pack ? packed + (r - r0) * dv : nullptr;
        float* out = s + r * ss + j;
        switch ((n + 1) / 2) {
          case 4:
            ScoreBlock<L, 4>(dim, dv, qq, qp, kk, out, ss, n, nk);
            break;
          case 3:
            ScoreBlock<L, 3>(dim, dv, qq, qp, kk, out, ss, n, nk);
            break;
          case 2:
            ScoreBlock<L, 2>(dim, dv, qq, qp, kk, out, ss, n, nk);
            break;
          default:
            ScoreBlock<L, 1>(dim, dv, qq, qp, kk, out, ss, n, nk);
            break;
        }
      }
    }
  }
}

// ---- Accumulate ----

// o[r][d0, d0 + 16 W) += sum_j p[r][j] * v[j][d0 + ...] for R rows.
template <class L, int R, int W, class T = typename L::T>
inline void AccumulateBlock(int keys, const float* p, int64_t ps, const T* v, int64_t vs, float* o,
                            int64_t os) {
  __m512 acc[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) acc[r][w] = _mm512_loadu_ps(o + r * os + 16 * w);
  }
  for (int j = 0; j < keys; ++j) {
    __m512 x[W];
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) x[w] = L::Load16(v + j * vs + 16 * w);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 wt = _mm512_set1_ps(p[r * ps + j]);
#pragma GCC unroll 2
      for (int w = 0; w < W; ++w) acc[r][w] = _mm512_fmadd_ps(wt, x[w], acc[r][w]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) _mm512_storeu_ps(o + r * os + 16 * w, acc[r][w]);
  }
}

template <class L, int W, class T = typename L::T>
inline void AccumulateStrip(int rows, int keys, const float* p, int64_t ps, const T* v, int64_t vs,
                            float* o, int64_t os) {
  int r = 0;
  for (; r + 8 <= rows; r += 8)
    AccumulateBlock<L, 8, W>(keys, p + r * ps, ps, v, vs, o + r * os, os);
  if (r + 4 <= rows) {
    AccumulateBlock<L, 4, W>(keys, p + r * ps, ps, v, vs, o + r * os, os);
    r += 4;
  }
  if (r + 2 <= rows) {
    AccumulateBlock<L, 2, W>(keys, p + r * ps, ps, v, vs, o + r * os, os);
    r += 2;
  }
  if (r < rows) AccumulateBlock<L, 1, W>(keys, p + r * ps, ps, v, vs, o + r * os, os);
}

constexpr int kAccumulateKeyBlock = 64;  // as in the AVX2 file

template <class L, class T = typename L::T>
void Accumulate(int rows, int keys, int dim, const float* p, int64_t ps, const T* v, int64_t vs,
                float* o, int64_t os) {
  // Keys in blocks, then strips of 32 columns (16 for a last odd strip),
  // then blocks of rows; each output element still adds its keys one by one
  // in order, so the blocking never changes a sum.
  const int d32 = dim & ~31, d16 = dim & ~15;
  for (int j0 = 0; j0 < keys; j0 += kAccumulateKeyBlock) {
    const int nj = std::min(kAccumulateKeyBlock, keys - j0);
    const float* pj = p + j0;
    const T* vj = v + j0 * vs;
    for (int d = 0; d < d32; d += 32)
      AccumulateStrip<L, 2>(rows, nj, pj, ps, vj + d, vs, o + d, os);
    if (d16 > d32) AccumulateStrip<L, 1>(rows, nj, pj, ps, vj + d32, vs, o + d32, os);
  }
  for (int rr = 0; rr < rows; ++rr) {
    for (int j = 0; j < keys; ++j) {
      const float w = p[rr * ps + j];
      for (int d = d16; d < dim; ++d) {
        o[rr * os + d] = std::fma(w, L::Load1(v + j * vs + d), o[rr * os + d]);
      }
    }
  }
}

}  // namespace

void UseAvx512AttnTile(AttnTileKernels* k) {
  k->scores = Scores<F32Rows>;
  k->accumulate = Accumulate<F32Rows>;
  k->scores_f16 = Scores<F16Rows>;
  k->accumulate_f16 = Accumulate<F16Rows>;
  k->scores_bf16 = Scores<Bf16Rows>;
  k->accumulate_bf16 = Accumulate<Bf16Rows>;
}

}  // namespace ellm::kernels::internal

#else  // not built for AVX-512

namespace ellm::kernels::internal {
void UseAvx512AttnTile(AttnTileKernels*) {}
}  // namespace ellm::kernels::internal

#endif

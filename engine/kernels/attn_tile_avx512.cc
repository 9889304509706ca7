// AVX-512 versions of attn_tile.h's Scores, Accumulate and Exp (F, BW, DQ,
// VL; the rest of the table stays AVX2). They compute every output with exactly
// the AVX2 kernels' operations, so the two levels agree bit for bit and a
// result never depends on the machine's vector width:
//   Scores: each score is one 8-lane FMA chain over d in order and one
//     Hsum4 tree (attn_tile_avx2.cc). Here a ZMM holds two such chains, the
//     same key against two query rows (rows in the halves, the key's 8
//     values duplicated), so one FMA advances two scores; the Hsum4 trees
//     run on whole ZMM registers, four rows' at once. With 32 or more rows
//     (prefill) the keys are transposed instead, 16 keys per register, and
//     the chains and trees become vertical FMAs and adds (ScoresT).
//   Accumulate: each output element is one FMA chain over keys in order;
//     here 16 elements per register instead of 8.
//   ScoresBf16 and AccumulateBf16Pairs (bf16 pair dot products) are in
//     attn_tile_avx512_bf16.cc; the pieces both files share (row loads, the
//     Hsum4 trees and stores), in attn_tile_avx512_common.h.
#include "kernels/attn_tile.h"

#include "kernels/avx512_intrin.h"
#include "kernels/isa_target.h"
#include "kernels/spread_prefetch.h"

#if defined(ELLM_AVX512_KERNELS)

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attn_tile_avx512_common.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512)

namespace ellm::kernels::internal {
namespace {

template <class L>
float DotTail(int d0, int dim, const float* a, const typename L::T* b) {
  float s = 0.0f;
  for (int d = d0; d < dim; ++d) s = std::fma(a[d], L::Load1(b + d), s);
  return s;
}

// ---- Scores ----

// Query rows of a chunk, packed in pairs so that one aligned load gives a
// pair's 8 values at d: pair i at qp + i * 2 * dv, d at + 2 * d, row a's
// values then row b's. Up to this many dimensions; wider heads load each
// row's half and join them (the same values, one shuffle more).
constexpr int kPackedQMaxDim = 512;

// Scores of P row pairs x 4 keys (P * 4 accumulators): q[2i] and q[2i + 1]
// are pair i's rows (equal when a lone row fills a pair; `rows` says how
// many of the 2P are real), qp their packed pairs (used when kPacked),
// kk[0..3] the keys (the last repeated when fewer than nk = 4 are real).
// s[r * ss + c] for real rows r and c < nk. The Hsum4 trees run on whole
// ZMM registers (Hadd, FinishTrees): the same additions of the same values
// as the AVX2 file's, with a third of its shuffles.
template <class L, int P, bool kPacked, class T = typename L::T>
inline void ScoreBlock(int dim, int dv, const float* const* q, const float* qp, const T* const* kk,
                       float* s, int64_t ss, int rows, int nk, SpreadPrefetch& pf) {
  __m512 acc[P][kScoreKeys];
#pragma GCC unroll 16
  for (int i = 0; i < P; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  for (int d = 0; d < dv; d += 8) {
    pf.Step();
    __m512 b[kScoreKeys];
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) b[c] = L::Dup8(kk[c] + d);
#pragma GCC unroll 16
    for (int i = 0; i < P; ++i) {
      __m512 x;
      if constexpr (kPacked) {
        x = _mm512_load_ps(qp + i * 2 * dv + 2 * d);
      } else {
        x = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(q[2 * i] + d)),
                               _mm256_loadu_ps(q[2 * i + 1] + d), 1);
      }
#pragma GCC unroll 4
      for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_fmadd_ps(x, b[c], acc[i][c]);
    }
  }
  StoreBlockScores<P>(acc, rows, nk, dv < dim, s, ss,
                      [&](int r, int c) { return DotTail<L>(dv, dim, q[r], kk[c]); });
}

// The common case of ScoreBlock (2P = 8 or 4 real rows, packed, 4 real
// keys, no tail past dv): the same operations, with the keys addressed by
// stride and the scores stored whole (no masks, no row pointers).
template <class L, int P, class T = typename L::T>
inline void ScoreBlockFull(int dv, const float* qp, const T* k, int64_t ks, float* s, int64_t ss,
                           SpreadPrefetch& pf) {
  static_assert(P == 2 || P == 4);
  __m512 acc[P][kScoreKeys];
#pragma GCC unroll 16
  for (int i = 0; i < P; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  const T* k1 = k + ks;
  const T* k2 = k + 2 * ks;
  const T* k3 = k + 3 * ks;
  for (int d = 0; d < dv; d += 8) {
    pf.Step();
    const __m512 b[kScoreKeys] = {L::Dup8(k + d), L::Dup8(k1 + d), L::Dup8(k2 + d),
                                  L::Dup8(k3 + d)};
#pragma GCC unroll 4
    for (int i = 0; i < P; ++i) {
      const __m512 x = _mm512_load_ps(qp + i * 2 * dv + 2 * d);
#pragma GCC unroll 4
      for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_fmadd_ps(x, b[c], acc[i][c]);
    }
  }
  StoreFullScores<P>(acc, s, ss);
}

template <class L, bool kPacked, class T = typename L::T>
inline void ScoreRows(int n, int dim, int dv, const float* const* q, const float* qp,
                      const T* const* kk, float* s, int64_t ss, int nk, SpreadPrefetch& pf) {
  switch ((n + 1) / 2) {
    case 4:
      ScoreBlock<L, 4, kPacked>(dim, dv, q, qp, kk, s, ss, n, nk, pf);
      break;
    case 3:
      ScoreBlock<L, 3, kPacked>(dim, dv, q, qp, kk, s, ss, n, nk, pf);
      break;
    case 2:
      ScoreBlock<L, 2, kPacked>(dim, dv, q, qp, kk, s, ss, n, nk, pf);
      break;
    default:
      ScoreBlock<L, 1, kPacked>(dim, dv, q, qp, kk, s, ss, n, nk, pf);
      break;
  }
}

// ---- Scores with the keys in lanes (many rows: prefill) ----
//
// With many query rows per key tile, the keys are first transposed so that
// a register holds one dimension of 16 keys: each FMA then advances 16
// scores of one row and no score needs a horizontal sum. The arithmetic is
// ScoreBlock's, score for score: chain c (c < 8) of a score is the FMA
// chain over d = c, c + 8, ... from zero, and the chains meet in the same
// Hsum4 tree ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)), now as
// vertical adds. The trees were ~1.5 shuffles and adds per score beside 4
// FMAs at head size 64 (Llama 3.2 1B); here 7 adds per 16 scores.

// Keys per transposed block (two registers per dimension), and the widest
// head transposed (64 keys x 128 floats: 32 KiB of stack). At head size
// 256 the trees are ~1/10 of the work and the transposed keys (64 KiB)
// fall out of L1 (in-cache Scores, 256 rows, one thread, alternated: 72-77
// GMAC/s as before, 66-74 transposed); at 64, 50-55 -> 73-81.
constexpr int kKeysT = 32;
constexpr int kMaxDimT = 128;
// Rows from which the transposition pays (it costs ~1/16 of a row's
// products per key tile; the trees cost ~1/3 at head size 64).
constexpr int kMinRowsT = 32;

// The low (high) 64-bit halves of each 128-bit lane of x and y, interleaved.
inline __m512 UnpackLo64(__m512 x, __m512 y) {
  return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
}
inline __m512 UnpackHi64(__m512 x, __m512 y) {
  return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y)));
}

// 16 x 16 floats: m[i] holds row i; on return m[c] holds column c.
inline void Transpose16(__m512 (&m)[16]) {
  __m512 a[16], b[16];
  for (int k = 0; k < 8; ++k) {
    a[2 * k] = _mm512_unpacklo_ps(m[2 * k], m[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_ps(m[2 * k], m[2 * k + 1]);
  }
  // b[4k + c]: in 128-bit lane l, column 4l + c of rows 4k .. 4k + 3.
  for (int k = 0; k < 4; ++k) {
    b[4 * k] = UnpackLo64(a[4 * k], a[4 * k + 2]);
    b[4 * k + 1] = UnpackHi64(a[4 * k], a[4 * k + 2]);
    b[4 * k + 2] = UnpackLo64(a[4 * k + 1], a[4 * k + 3]);
    b[4 * k + 3] = UnpackHi64(a[4 * k + 1], a[4 * k + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 u0 = _mm512_shuffle_f32x4(b[c], b[4 + c], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 u1 = _mm512_shuffle_f32x4(b[c], b[4 + c], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 v0 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 v1 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], _MM_SHUFFLE(3, 2, 3, 2));
    m[c] = _mm512_shuffle_f32x4(u0, v0, _MM_SHUFFLE(2, 0, 2, 0));
    m[4 + c] = _mm512_shuffle_f32x4(u0, v0, _MM_SHUFFLE(3, 1, 3, 1));
    m[8 + c] = _mm512_shuffle_f32x4(u1, v1, _MM_SHUFFLE(2, 0, 2, 0));
    m[12 + c] = _mm512_shuffle_f32x4(u1, v1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// Keys [0, nk) (nk <= kKeysT) of k, widened, as kt[d * kKeysT + j]; the
// lanes of missing keys are zeros. dim is a multiple of 16.
template <class L, class T = typename L::T>
inline void TransposeKeys(int nk, int dim, const T* k, int64_t ks, float* kt) {
  for (int j0 = 0; j0 < kKeysT; j0 += 16) {
    for (int d0 = 0; d0 < dim; d0 += 16) {
      __m512 m[16];
      for (int i = 0; i < 16; ++i) {
        m[i] = j0 + i < nk ? L::Load16(k + (j0 + i) * ks + d0) : _mm512_setzero_ps();
      }
      Transpose16(m);
      for (int c = 0; c < 16; ++c) _mm512_store_ps(kt + (d0 + c) * kKeysT + j0, m[c]);
    }
  }
}

// Scores of R rows (q[0..R)) against the kKeysT transposed keys: s[r * ss
// + j] for j < nk.
template <int R>
inline void ScoreRowsT(int dim, const float* const* q, const float* kt, float* s, int64_t ss,
                       int nk) {
  __m512 sum[R][2], part[R][2], high[R][2];
  // into = chain a + chain a + 1 (a even), the two chains run side by side:
  // 4 R independent FMA chains (one chain at a time, 2 R = 6, left the FMA
  // pipes waiting on its latency a quarter of the time).
  const auto pair = [&](int a, __m512(&into)[R][2]) {
    __m512 acc[R][2], bcc[R][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      bcc[r][0] = bcc[r][1] = _mm512_setzero_ps();
    }
    for (int d = a; d < dim; d += 8) {
      const float* ka = kt + d * kKeysT;
      __m512 a0 = _mm512_load_ps(ka), a1 = _mm512_load_ps(ka + 16);
      __m512 b0 = _mm512_load_ps(ka + kKeysT), b1 = _mm512_load_ps(ka + kKeysT + 16);
      // Kept in registers: GCC otherwise folds each load into every row's
      // FMA, and a load per FMA made the loop load-bound (57 -> 74-81
      // GMAC/s in cache at head size 64).
      KeepInRegister(a0);
      KeepInRegister(a1);
      KeepInRegister(b0);
      KeepInRegister(b1);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m512 xa = _mm512_set1_ps(q[r][d]), xb = _mm512_set1_ps(q[r][d + 1]);
        acc[r][0] = _mm512_fmadd_ps(xa, a0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(xa, a1, acc[r][1]);
        bcc[r][0] = _mm512_fmadd_ps(xb, b0, bcc[r][0]);
        bcc[r][1] = _mm512_fmadd_ps(xb, b1, bcc[r][1]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      into[r][0] = _mm512_add_ps(acc[r][0], bcc[r][0]);
      into[r][1] = _mm512_add_ps(acc[r][1], bcc[r][1]);
    }
  };
  pair(0, sum);
  pair(2, part);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    sum[r][0] = _mm512_add_ps(sum[r][0], part[r][0]);  // (c0 + c1) + (c2 + c3)
    sum[r][1] = _mm512_add_ps(sum[r][1], part[r][1]);
  }
  pair(4, high);
  pair(6, part);
  const __mmask16 m0 = static_cast<__mmask16>(nk >= 16 ? 0xFFFF : (1u << nk) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(nk >= 32   ? 0xFFFF
                                              : nk <= 16 ? 0
                                                         : (1u << (nk - 16)) - 1);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 h0 = _mm512_add_ps(high[r][0], part[r][0]);  // (c4 + c5) + (c6 + c7)
    const __m512 h1 = _mm512_add_ps(high[r][1], part[r][1]);
    _mm512_mask_storeu_ps(s + r * ss, m0, _mm512_add_ps(sum[r][0], h0));
    _mm512_mask_storeu_ps(s + r * ss + 16, m1, _mm512_add_ps(sum[r][1], h1));
  }
}

template <class L, class T = typename L::T>
void ScoresT(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
             float* s, int64_t ss) {
  // All kChunkT keys transposed first, then rows outer: a block's query
  // rows stay in L1 across the key blocks (keys outer streamed every row
  // from L2 once per block).
  constexpr int kChunkT = 2 * kKeysT;
  alignas(64) float kt[kChunkT * kMaxDimT];
  for (int j0 = 0; j0 < keys; j0 += kChunkT) {
    const int nk = std::min(kChunkT, keys - j0);
    const int blocks = (nk + kKeysT - 1) / kKeysT;
    for (int b = 0; b < blocks; ++b) {
      TransposeKeys<L>(std::min(kKeysT, nk - b * kKeysT), dim, k + (j0 + b * kKeysT) * ks, ks,
                       kt + b * kKeysT * dim);
    }
    const auto run = [&]<int R>(int r) {
      const float* qq[R];
      for (int i = 0; i < R; ++i) qq[i] = q + (r + i) * qs;
      for (int b = 0; b < blocks; ++b) {
        ScoreRowsT<R>(dim, qq, kt + b * kKeysT * dim, s + r * ss + j0 + b * kKeysT, ss,
                      std::min(kKeysT, nk - b * kKeysT));
      }
    };
    int r = 0;
    for (; r + 3 <= rows; r += 3) run.template operator()<3>(r);
    if (rows - r == 2) run.template operator()<2>(r);
    if (rows - r == 1) run.template operator()<1>(r);
  }
}

template <class L, class T = typename L::T>
void ScoresPf(int rows, int keys, int dim, const float* q, int64_t qs, const T* k, int64_t ks,
              float* s, int64_t ss, const void* prefetch, int64_t prefetch_bytes) {
  const int dv = dim & ~7;
  if (rows >= kMinRowsT && dim % 16 == 0 && dim <= kMaxDimT && prefetch == nullptr) {
    ScoresT<L>(rows, keys, dim, q, qs, k, ks, s, ss);
    return;
  }
  // One step per ScoreBlock iteration over d.
  SpreadPrefetch pf(
      prefetch, prefetch_bytes,
      int64_t{(keys + kScoreKeys - 1) / kScoreKeys} * ((rows + 7) / 8) * std::max(1, dv / 8));
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
      const bool whole = pack && dv == dim && nk == kScoreKeys;
      if (whole && r1 - r0 == kScoreRowChunk) {
        for (int r = r0; r < r1; r += 8) {
          ScoreBlockFull<L, 4>(dv, packed + (r - r0) * dv, k + j * ks, ks, s + r * ss + j, ss, pf);
        }
        continue;
      }
      if (whole && r1 - r0 == 4) {
        ScoreBlockFull<L, 2>(dv, packed, k + j * ks, ks, s + r0 * ss + j, ss, pf);
        continue;
      }
      const T* kk[kScoreKeys];
      for (int c = 0; c < kScoreKeys; ++c) kk[c] = k + (j + std::min(c, nk - 1)) * ks;
      for (int r = r0; r < r1; r += 8) {
        const int n = std::min(8, r1 - r);
        const float* qq[8];
        for (int i = 0; i < 8; ++i) qq[i] = q + (r + std::min(i, n - 1)) * qs;
        float* out = s + r * ss + j;
        if (pack) {
          ScoreRows<L, true>(n, dim, dv, qq, packed + (r - r0) * dv, kk, out, ss, nk, pf);
        } else {
          ScoreRows<L, false>(n, dim, dv, qq, nullptr, kk, out, ss, nk, pf);
        }
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
// ---- Accumulate ----

// o[r][d0, d0 + 16 W) += sum_j p[r][j] * v[j][d0 + ...] for R rows.
template <class L, int R, int W, class T = typename L::T>
inline void AccumulateBlock(int keys, const float* p, int64_t ps, const T* v, int64_t vs, float* o,
                            int64_t os, SpreadPrefetch& pf) {
  __m512 acc[R][W];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) acc[r][w] = _mm512_loadu_ps(o + r * os + 16 * w);
  }
  for (int j = 0; j < keys; ++j) {
    pf.Step();
    __m512 x[W];
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) x[w] = L::Load16(v + j * vs + 16 * w);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 wt = _mm512_set1_ps(p[r * ps + j]);
#pragma GCC unroll 4
      for (int w = 0; w < W; ++w) acc[r][w] = _mm512_fmadd_ps(wt, x[w], acc[r][w]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) _mm512_storeu_ps(o + r * os + 16 * w, acc[r][w]);
  }
}

template <class L, int W, class T = typename L::T>
inline void AccumulateStrip(int rows, int keys, const float* p, int64_t ps, const T* v, int64_t vs,
                            float* o, int64_t os, SpreadPrefetch& pf) {
  int r = 0;
  for (; r + 8 <= rows; r += 8)
    AccumulateBlock<L, 8, W>(keys, p + r * ps, ps, v, vs, o + r * os, os, pf);
  if (r + 4 <= rows) {
    AccumulateBlock<L, 4, W>(keys, p + r * ps, ps, v, vs, o + r * os, os, pf);
    r += 4;
  }
  if (r + 2 <= rows) {
    AccumulateBlock<L, 2, W>(keys, p + r * ps, ps, v, vs, o + r * os, os, pf);
    r += 2;
  }
  if (r < rows) AccumulateBlock<L, 1, W>(keys, p + r * ps, ps, v, vs, o + r * os, os, pf);
}

constexpr int kAccumulateKeyBlock = 64;  // as in the AVX2 file

// AccumulateBlock calls per strip of a key block: blocks of 8, 4, 2, 1 rows.
inline int RowBlocks(int rows) { return rows / 8 + (rows % 8 >= 4) + (rows % 4 >= 2) + (rows % 2); }

template <class L, class T = typename L::T>
void AccumulatePf(int rows, int keys, int dim, const float* p, int64_t ps, const T* v, int64_t vs,
                  float* o, int64_t os, const void* prefetch, int64_t prefetch_bytes) {
  // Keys in blocks, then strips of 32 columns (16 for a last odd strip),
  // then blocks of rows; each output element still adds its keys one by one
  // in order, so the blocking never changes a sum.
  const int d32 = dim & ~31, d16 = dim & ~15;
  // One step per AccumulateBlock iteration over keys.
  const int strips = rows == 4 ? d32 / 64 + d32 % 64 / 32 : d32 / 32;
  SpreadPrefetch pf(prefetch, prefetch_bytes,
                    int64_t{keys} * RowBlocks(rows) * (strips + (d16 > d32 ? 1 : 0)));
  for (int j0 = 0; j0 < keys; j0 += kAccumulateKeyBlock) {
    const int nj = std::min(kAccumulateKeyBlock, keys - j0);
    const float* pj = p + j0;
    const T* vj = v + j0 * vs;
    int d = 0;
    if (rows == 4) {  // decode's four query heads: 64 columns a block
      for (; d + 64 <= d32; d += 64)
        AccumulateBlock<L, 4, 4>(nj, pj, ps, vj + d, vs, o + d, os, pf);
    }
    for (; d < d32; d += 32) AccumulateStrip<L, 2>(rows, nj, pj, ps, vj + d, vs, o + d, os, pf);
    if (d16 > d32) AccumulateStrip<L, 1>(rows, nj, pj, ps, vj + d32, vs, o + d32, os, pf);
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

// ---- Exp ----

// attn_tile_avx2.cc's Exp8 on 16 lanes: the same operations in the same
// order per lane (round to nearest, Cephes' polynomial, 2^n by exponent
// bits), so every lane's bits equal the AVX2 kernel's.
inline __m512 Exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3f);
  const __mmask16 zero = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, lo), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~zero), y);
}

// The tail through Exp16 too (masked), so exp(x) does not depend on x's index.
void Exp(int64_t n, const float* x, float* y) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Exp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, Exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

}  // namespace

void UseAvx512AttnTile(AttnTileKernels* k) {
  k->exp = Exp;
  k->scores = Scores<F32Rows>;
  k->accumulate = Accumulate<F32Rows>;
  k->scores_f16 = ScoresPf<F16Rows>;
  k->accumulate_f16 = AccumulatePf<F16Rows>;
  k->accumulate_bf16 = AccumulatePf<Bf16Rows>;
  k->scores_bf16_wide = ScoresPf<Bf16Rows>;
  UseAvx512Bf16AttnTile(k);
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512

namespace ellm::kernels::internal {
void UseAvx512AttnTile(AttnTileKernels*) {}
}  // namespace ellm::kernels::internal

#endif
// AVX-512 versions of attn_tile.h's ScoresBf16 and AccumulateBf16Pairs (bf16
// pair dot products): VDPBF16PS where the CPU has AVX512_BF16 (these
// functions carry the target), else the table keeps the AVX2 file's
// emulation, which gives the same bits. The score blocks end in the Hsum4
// trees of attn_tile_avx512_common.h, as the f32 and f16 kernels'
// (attn_tile_avx512.cc) do.
#include "kernels/attn_tile.h"

#include "kernels/avx512_intrin.h"
#include "kernels/bf16_pairs.h"
#include "kernels/flush_denormals.h"
#include "kernels/isa_target.h"
#include "kernels/spread_prefetch.h"

#if defined(ELLM_AVX512_KERNELS)

#include <algorithm>
#include <cmath>

#include "kernels/attn_tile_avx512_common.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512)

namespace ellm::kernels::internal {
namespace {

// ---- ScoresBf16: bf16 pair dot products (attn_tile.h) ----
// The AVX2 file's emulation with VDPBF16PS: a ZMM holds two rows' chains
// for one key (row a's 16 bf16 values then row b's; the key's 16 values in
// both halves), one instruction advancing each lane by two products; the
// trees are ScoreBlock's (attn_tile_avx512.cc). FlushDenormalsScope makes
// the tree additions and the tail flush denormals as the instruction does
// (and, in the emulated build, the instruction itself).

constexpr int kBf16MaxDim = 512;  // as in the AVX2 file: wider goes to the reference

inline float TopHalf(float x) {
  return _mm_cvtss_f32(_mm_and_ps(
      _mm_set_ss(x), _mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(0xFFFF0000u)))));
}
inline float TailBf16(int d0, int dim, const float* q, const uint16_t* k) {
  float t = 0.0f;
  for (int d = d0; d < dim; ++d) t = std::fma(TopHalf(q[d]), Bf16Rows::Load1(k + d), t);
  return t;
}
// Bf16ScoreBlock's tail(r, c) for StoreBlockScores. A class of this region,
// not a lambda of the kernel: a lambda would take the kernel's bf16 target,
// wider than StoreBlockScores', and GCC would not inline it there.
struct Bf16Tail {
  int d0, dim;
  const float* const* q;
  const uint16_t* const* kk;
  float operator()(int r, int c) const { return TailBf16(d0, dim, q[r], kk[c]); }
};
inline __m512i Dup16(const uint16_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// P row pairs x 4 keys, as ScoreBlock (kk[] repeats the last real key;
// q[2i], q[2i + 1] pair i's rows, for the tail).
template <int P>
ELLM_TARGET_AVX512_BF16 inline void Bf16ScoreBlock(int dim, int d16, const uint16_t* qp,
                                                   const float* const* q, const uint16_t* const* kk,
                                                   float* s, int64_t ss, int rows, int nk,
                                                   SpreadPrefetch& pf) {
  __m512 acc[P][kScoreKeys];
#pragma GCC unroll 16
  for (int i = 0; i < P; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  for (int d = 0; d < d16; d += 16) {
    pf.Step();
    __m512i b[kScoreKeys];
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) b[c] = Dup16(kk[c] + d);
#pragma GCC unroll 16
    for (int i = 0; i < P; ++i) {
      const __m512i x = _mm512_load_si512(qp + i * 2 * d16 + 2 * d);
#pragma GCC unroll 4
      for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = ELLM_DOT_BF16_PAIRS(acc[i][c], x, b[c]);
    }
  }
  StoreBlockScores<P>(acc, rows, nk, d16 < dim, s, ss, Bf16Tail{d16, dim, q, kk});
}

// The common case (2P = 8 or 4 real rows, 4 real keys, no tail), keys by
// stride and whole stores, as ScoreBlockFull.
template <int P>
ELLM_TARGET_AVX512_BF16 inline void Bf16ScoreBlockFull(int d16, const uint16_t* qp,
                                                       const uint16_t* k, int64_t ks, float* s,
                                                       int64_t ss, SpreadPrefetch& pf) {
  static_assert(P == 2 || P == 4);
  __m512 acc[P][kScoreKeys];
#pragma GCC unroll 16
  for (int i = 0; i < P; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  const uint16_t* k1 = k + ks;
  const uint16_t* k2 = k + 2 * ks;
  const uint16_t* k3 = k + 3 * ks;
  for (int d = 0; d < d16; d += 16) {
    pf.Step();
    const __m512i b[kScoreKeys] = {Dup16(k + d), Dup16(k1 + d), Dup16(k2 + d), Dup16(k3 + d)};
#pragma GCC unroll 4
    for (int i = 0; i < P; ++i) {
      const __m512i x = _mm512_load_si512(qp + i * 2 * d16 + 2 * d);
#pragma GCC unroll 4
      for (int c = 0; c < kScoreKeys; ++c) acc[i][c] = ELLM_DOT_BF16_PAIRS(acc[i][c], x, b[c]);
    }
  }
  StoreFullScores<P>(acc, s, ss);
}

template <int P>
ELLM_TARGET_AVX512_BF16 void Bf16ScoreRows(int dim, int d16, const uint16_t* qp,
                                           const float* const* q, const uint16_t* const* kk,
                                           float* s, int64_t ss, int rows, int nk,
                                           SpreadPrefetch& pf) {
  Bf16ScoreBlock<P>(dim, d16, qp, q, kk, s, ss, rows, nk, pf);
}

ELLM_TARGET_AVX512_BF16 void ScoresBf16(int rows, int keys, int dim, const float* q, int64_t qs,
                                        const uint16_t* k, int64_t ks, float* s, int64_t ss,
                                        const void* prefetch, int64_t prefetch_bytes) {
  if (dim > kBf16MaxDim) {
    kAttnTileRef.scores_bf16(rows, keys, dim, q, qs, k, ks, s, ss, prefetch, prefetch_bytes);
    return;
  }
  const FlushDenormalsScope flush;
  const int d16 = dim & ~15;
  SpreadPrefetch pf(
      prefetch, prefetch_bytes,
      int64_t{(keys + kScoreKeys - 1) / kScoreKeys} * ((rows + 7) / 8) * std::max(1, d16 / 16));
  // Row pairs of a chunk as bf16: pair i at qp + i * 2 * d16, its 16 values
  // at d (row a's, then row b's) at + 2 * d; a lone row pairs with itself.
  alignas(64) uint16_t packed[kScoreRowChunk * kBf16MaxDim];
  for (int r0 = 0; r0 < rows; r0 += kScoreRowChunk) {
    const int r1 = std::min(rows, r0 + kScoreRowChunk);
    for (int i = 0; 2 * i < r1 - r0; ++i) {
      const float* a = q + (r0 + 2 * i) * qs;
      const float* b = q + std::min(r0 + 2 * i + 1, r1 - 1) * qs;
      uint16_t* out = packed + i * 2 * d16;
      for (int d = 0; d < d16; d += 16) {
        const __m512i ha = _mm512_srli_epi32(_mm512_castps_si512(_mm512_loadu_ps(a + d)), 16);
        const __m512i hb = _mm512_srli_epi32(_mm512_castps_si512(_mm512_loadu_ps(b + d)), 16);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 2 * d), _mm512_cvtepi32_epi16(ha));
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 2 * d + 16), _mm512_cvtepi32_epi16(hb));
      }
    }
    for (int j = 0; j < keys; j += kScoreKeys) {
      const int nk = std::min(kScoreKeys, keys - j);
      const bool whole = d16 == dim && nk == kScoreKeys;
      if (whole && r1 - r0 == kScoreRowChunk) {
        for (int r = r0; r < r1; r += 8) {
          Bf16ScoreBlockFull<4>(d16, packed + (r - r0) * d16, k + j * ks, ks, s + r * ss + j, ss,
                                pf);
        }
        continue;
      }
      if (whole && r1 - r0 == 4) {
        Bf16ScoreBlockFull<2>(d16, packed, k + j * ks, ks, s + r0 * ss + j, ss, pf);
        continue;
      }
      const uint16_t* kk[kScoreKeys];
      for (int c = 0; c < kScoreKeys; ++c) kk[c] = k + (j + std::min(c, nk - 1)) * ks;
      for (int r = r0; r < r1; r += 8) {
        const int n = std::min(8, r1 - r);
        const float* qq[8];
        for (int i = 0; i < 8; ++i) qq[i] = q + (r + std::min(i, n - 1)) * qs;
        const uint16_t* qp = packed + (r - r0) * d16;
        float* out = s + r * ss + j;
        switch ((n + 1) / 2) {
          case 4:
            Bf16ScoreRows<4>(dim, d16, qp, qq, kk, out, ss, n, nk, pf);
            break;
          case 3:
            Bf16ScoreRows<3>(dim, d16, qp, qq, kk, out, ss, n, nk, pf);
            break;
          case 2:
            Bf16ScoreRows<2>(dim, d16, qp, qq, kk, out, ss, n, nk, pf);
            break;
          default:
            Bf16ScoreRows<1>(dim, d16, qp, qq, kk, out, ss, n, nk, pf);
            break;
        }
      }
    }
  }
  pf.Finish();
}

// ---- AccumulateBf16Pairs (attn_tile.h) ----
// The AVX2 emulation's chains with VDPBF16PS, 16 columns a register: a ZMM
// of V pairs (16 columns x 2 keys), a broadcast weight pair per row.

// o[r][0, 16W) for R rows over `pairs` key pairs (vp rows `dim` apart,
// weight pairs wp[r * wps + m]).
template <int R, int W>
ELLM_TARGET_AVX512_BF16 inline void Bf16PairBlock(int pairs, int dim, const uint32_t* wp, int wps,
                                                  const uint32_t* vp, float* o, int64_t os) {
  __m512 acc[R][W];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) acc[r][w] = _mm512_loadu_ps(o + r * os + 16 * w);
  }
  for (int m = 0; m < pairs; ++m) {
    __m512i x[W];
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) x[w] = _mm512_loadu_si512(vp + int64_t{m} * dim + 16 * w);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i wt = _mm512_set1_epi32(static_cast<int>(wp[r * wps + m]));
#pragma GCC unroll 4
      for (int w = 0; w < W; ++w) acc[r][w] = ELLM_DOT_BF16_PAIRS(acc[r][w], wt, x[w]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) _mm512_storeu_ps(o + r * os + 16 * w, acc[r][w]);
  }
}

inline float TopOf(uint32_t x) {
  return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(x & 0xFFFF0000u))));
}

constexpr int kPairKeys = 64;  // as in the AVX2 file

// R rows (R <= 8) of one piece of keys, every column.
template <int R>
ELLM_TARGET_AVX512_BF16 void Bf16PairRows(int pairs, int dim, const uint32_t* wp,
                                          const uint32_t* vj, float* o, int64_t os) {
  const int d32 = dim & ~31, d16 = dim & ~15;
  int d = 0;
  if constexpr (R == 4) {  // decode's four query heads: 64 columns a block
    for (; d + 64 <= d32; d += 64) Bf16PairBlock<4, 4>(pairs, dim, wp, pairs, vj + d, o + d, os);
  }
  for (; d < d32; d += 32) Bf16PairBlock<R, 2>(pairs, dim, wp, pairs, vj + d, o + d, os);
  if (d16 > d32) Bf16PairBlock<R, 1>(pairs, dim, wp, pairs, vj + d32, o + d32, os);
  for (int i = 0; i < R; ++i) {
    for (int c = d16; c < dim; ++c) {
      float acc = o[i * os + c];
      for (int m = 0; m < pairs; ++m) {
        const uint32_t v = vj[int64_t{m} * dim + c], w = wp[i * pairs + m];
        acc = std::fma(TopOf(w), TopOf(v), acc);
        acc = std::fma(TopOf(w << 16), TopOf(v << 16), acc);
      }
      o[i * os + c] = acc;
    }
  }
}

ELLM_TARGET_AVX512_BF16 void AccumulateBf16Pairs(int rows, int keys, int dim, const float* p,
                                                 int64_t ps, const uint32_t* vp, float* o,
                                                 int64_t os) {
  const FlushDenormalsScope flush;  // the tail columns' fma (DAZ, FTZ)
  alignas(64) uint32_t wp[8 * kPairKeys / 2];
  for (int j0 = 0; j0 < keys; j0 += kPairKeys) {
    const int nk = std::min(kPairKeys, keys - j0), pairs = (nk + 1) / 2;
    const uint32_t* vj = vp + int64_t{j0 / 2} * dim;
    for (int r = 0; r < rows;) {
      const int n = rows - r >= 8 ? 8 : rows - r >= 4 ? 4 : 1;
      for (int i = 0; i < n; ++i) {
        for (int m = 0; m < pairs; ++m)
          wp[i * pairs + m] = WeightPair(p + (r + i) * ps + j0, m, nk);
      }
      if (n == 8) {
        Bf16PairRows<8>(pairs, dim, wp, vj, o + r * os, os);
      } else if (n == 4) {
        Bf16PairRows<4>(pairs, dim, wp, vj, o + r * os, os);
      } else {
        Bf16PairRows<1>(pairs, dim, wp, vj, o + r * os, os);
      }
      r += n;
    }
  }
}

}  // namespace

void UseAvx512Bf16AttnTile(AttnTileKernels* k) {
#if defined(ELLM_AVX512_BF16_EMULATED)
  const bool bf16 = true;
#else
  const bool bf16 = HostCpu().avx512bf16;
#endif
  if (bf16) {  // else the AVX2 emulations (same bits)
    k->scores_bf16 = ScoresBf16;
    k->accumulate_bf16_pairs = AccumulateBf16Pairs;
  }
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512

namespace ellm::kernels::internal {
void UseAvx512Bf16AttnTile(AttnTileKernels*) {}
}  // namespace ellm::kernels::internal

#endif

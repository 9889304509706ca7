// AVX-512 VNNI packed GEMM. A register tile is two adjacent groups (16 rows)
// x kTile tokens: one ZMM holds the same 32-byte chunk of both groups (group
// g in lanes 0-7, group g + 1 in lanes 8-15), so one VPDPBUSD against a
// broadcast of 4 activation bytes adds 4 products into each of 16 rows' i32
// lanes, where AVX2 needs VPMADDUBSW, VPMADDWD and adds for 8 rows. A lone
// last group is run as the pair (g, g) and its upper half dropped. One
// token (decode) runs every group alone (see Gemm). Prefill reads a pair's
// quants from a per-thread copy made once per token chunk (the pair buffer).
//
// Integer bounds: VPDPBUSD adds u8 * i8 products straight into i32, without
// the i16 saturation AVX2 has to avoid (activations are in [-127, 127]):
//   Q8_0: signed weights are made unsigned by flipping the sign bit
//         (w + 128 in [0, 255]); 128 * (sum of the block's activations)
//         comes off afterwards: at most 32 * 255 * 127 ~ 1.0e6 per block.
//   Q5_0, Q4_0: q in [0, 31] / [0, 15] as stored; kOffset * sum comes off.
//   IQ4_NL: its 4-bit indices are looked up (VPSHUFB) in the table's values
//         plus 128 ([1, 241]); 128 * sum comes off, as for Q8_0.
//   Q4_K: a 32-element group's dot is at most 32 * 15 * 127 = 60960, times
//         its 6-bit scale in VPMULLD (Q5_K, q in [0, 31]: 125984); super-block sums as in the AVX2
//         file.
//   Q6_K: a 16-element group's dot is at most 16 * 63 * 127 = 128016, times
//         its signed 8-bit scale in VPMULLD.
// Integer sums are exact, so grouping them differently from the AVX2 kernels
// changes nothing; the float work per block is the scalar reference's,
// operation for operation, in each lane (built with -ffp-contract=off):
// results equal RefVecDot bit for bit, as the AVX2 kernels' do.
//
// The loop over pairs and tokens (Gemm) and the helpers every type's
// kernels share are in gemm_packed_avx512_common.h, the pair buffer's
// copies (ExpandPair*, shared with the AMX kernels) in
// gemm_packed_avx512_pairs.h; the kernels for 2 to 16 tokens (batched
// decode, one group at a time) in gemm_packed_duo_avx512.cc; IQ4_XS's
// kernels in gemm_packed_iq4_avx512.cc, Q3_K's and Q2_K's in
// gemm_packed_q3_k_avx512.cc and gemm_packed_q2_k_avx512.cc.
#include "kernels/gemm_packed_isa.h"

#include "kernels/avx512_intrin.h"
#include "kernels/isa_target.h"

#if defined(ELLM_AVX512_VNNI_KERNELS)

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/gemm_packed_avx512_common.h"
#include "kernels/gemm_packed_avx512_pairs.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)

namespace ellm::kernels::internal {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQkK;

// ---- Q8_0, Q5_0, Q4_0 against Q8_0 ----

// kOffset: 0 for Q8_0 (signed quants), else the value subtracted from the
// stored unsigned quant (16 for Q5_0, 8 for Q4_0, kIq4NlOffset for IQ4_NL,
// whose float work, DotIq4Nl's (y.d * x.d) * sumi, is Q5_0's order).
//
// g0 and g1 are the matrix's own stored groups (g1 == g0 for a lone last
// group). kStored: their quants are unpacked in registers (Q5_0, Q4_0;
// PrefetchNextPair), else read from the pair buffer qp.
//
// kMin (Q4_1 with kOffset 8, Q5_1 with 16): the quants as Q4_0's / Q5_0's,
// nothing subtracted; the m table follows the d table, the activations are
// Q8_1 and each block adds m * s (as DotQ4_1 / DotQ5_1).
template <int kOffset, int T, bool kStored = false, bool kMin = false>
void Tile32(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
            const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const int64_t nb = w.cols / 32;
  const size_t m_base = PackedScaleBytes32(nb);
  [[maybe_unused]] const size_t q_base = m_base * (kMin ? 2 : 1);
  using ActBlock = std::conditional_t<kMin, quant::BlockQ8_1, BlockQ8_0>;
  const int8_t* act[T];
  const float* act_d[T];
  const int32_t* act_sum[T];
  const float* act_s[T];
  for (int t = 0; t < T; ++t) {
    act[t] = reinterpret_cast<const ActBlock*>(a.rows + (t0 + t) * a.stride)->qs;
    act_d[t] = a.block_d + (t0 + t) * nb;
    act_sum[t] = kMin ? nullptr : a.block_sum + (t0 + t) * nb;
    act_s[t] = kMin ? a.block_s + (t0 + t) * nb : nullptr;
  }
  constexpr int64_t kActBlock = sizeof(ActBlock);
  // The bias the stored bytes carry: Q8_0's flipped sign bit adds 128.
  constexpr int kBias = kMin ? 0 : kOffset == 0 ? 128 : kOffset;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next_pair(w, 2, nb);
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (kStored) PrefetchNextPair(next_pair, g0, g1, b);
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    // Adds chunk c's products (weights wq) to every token's sums.
    const auto chunk = [&](__m512i wq, int c) {
      for (int t = 0; t < T; ++t) {
        isum[t] = DpbusdBcast(isum[t], wq, act[t] + b * kActBlock + 4 * c);
      }
    };
    if constexpr (kStored) {
      const size_t q = q_base + static_cast<size_t>(b) * StoredBlock32Bytes(kOffset);
      StoredBlock32<kOffset>(g0 + q, g1 + q, chunk);
    } else {
      for (int c = 0; c < 8; ++c) chunk(PairChunk(qp, 8 * b + c), c);
    }
    const __m512 wd = Halves16(g0 + 2 * kPackRows * b, g1 + 2 * kPackRows * b);
    for (int t = 0; t < T; ++t) {
      __m512i ints = isum[t];
      if constexpr (!kMin) ints = _mm512_sub_epi32(ints, _mm512_set1_epi32(kBias * act_sum[t][b]));
      const __m512 da = _mm512_set1_ps(act_d[t][b]);
      const __m512 fi = _mm512_cvtepi32_ps(ints);
      __m512 term;
      if constexpr (kMin) {  // as DotQ4_1, DotQ5_1
        const size_t mo = m_base + 2 * kPackRows * b;
        term =
            _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(wd, da), fi),
                          _mm512_mul_ps(Halves16(g0 + mo, g1 + mo), _mm512_set1_ps(act_s[t][b])));
      } else if constexpr (kOffset == 0) {
        term = _mm512_mul_ps(fi, _mm512_mul_ps(wd, da));  // as DotQ8_0
      } else if constexpr (kOffset == 8) {
        term = _mm512_mul_ps(_mm512_mul_ps(fi, wd), da);  // as DotQ4_0
      } else {
        term = _mm512_mul_ps(_mm512_mul_ps(wd, da), fi);  // as DotQ5_0
      }
      acc[t] = _mm512_add_ps(acc[t], term);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- one token, one group (decode) ----

// A ZMM holds two adjacent chunks of one group (chunk c in lanes 0-7, c + 1
// in lanes 8-15) against the activations' dwords c and c + 1, so each
// VPDPBUSD serves 8 rows x 2 chunks instead of the pair (g, g)'s 16 rows x
// 1 chunk twice over. The halves are added after the block or super-block
// (i32 sums: exact in any order) and its float work runs on 8 lanes,
// operation for operation as the pair kernel's, so every row gets the bits
// the pair gave it.
//
// Q8_0, Q5_0, Q4_0 (Tile32's work).

// The fifth bits of chunks c (lanes 0-7) and c + 1 (lanes 8-15) as 0x10 or
// 0 per byte, c even; hh holds the group's 32 fifth-bit bytes in both halves.
inline __m512i FifthBits2(__m512i hh, int c) {
  const __m512i moved = c < 4 ? _mm512_sllv_epi16(hh, HalfCounts(4 - c, 3 - c))
                              : _mm512_srlv_epi16(hh, HalfCounts(c - 4, c - 3));
  return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
}

template <int kOffset, bool kMin = false>
void Tile32One(const PackedMatrix& w, const uint8_t* g, const GemmActivations& a, int64_t t0,
               const uint8_t* table, float* out) {
  const int64_t nb = w.cols / 32;
  const size_t m_base = PackedScaleBytes32(nb);
  const size_t q_base = m_base * (kMin ? 2 : 1);
  const float* act_d = a.block_d + t0 * nb;
  [[maybe_unused]] const int32_t* act_sum = kMin ? nullptr : a.block_sum + t0 * nb;
  [[maybe_unused]] const float* act_s = kMin ? a.block_s + t0 * nb : nullptr;
  constexpr int kBias = kOffset == 0 ? 128 : kOffset;
  constexpr bool kUnpack = kOffset != 0;
  constexpr size_t kBlock = !kUnpack        ? kPackedBlock32QuantBytes
                            : kOffset == 16 ? kStoredBlockQ5_0
                                            : kStoredBlockQ4_0;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const GroupPrefetch next(w, 2, nb);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    next(g, b);
    const size_t q = q_base + static_cast<size_t>(b) * kBlock;
    __m512i isum = _mm512_setzero_si512();
    if constexpr (kUnpack) {
      __m512i hh = _mm512_setzero_si512();
      if constexpr (kOffset == 16) {
        hh = _mm512_broadcast_i64x4(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(g + q + 128)));
      }
      for (int k = 0; k < 4; k += 2) {  // nibble vectors k, k + 1: chunks k, k + 1 and k + 4, k + 5
        const __m512i v = _mm512_loadu_si512(g + q + 32 * k);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if constexpr (kOffset == 16) {
          lo = _mm512_or_si512(lo, FifthBits2(hh, k));
          hi = _mm512_or_si512(hi, FifthBits2(hh, k + 4));
        }
        if constexpr (kOffset == kIq4NlOffset) {
          lo = Iq4Unsigned(lo);
          hi = Iq4Unsigned(hi);
        }
        isum = _mm512_dpbusd_epi32(isum, lo, PairChunk(table, 4 * b + k / 2));
        isum = _mm512_dpbusd_epi32(isum, hi, PairChunk(table, 4 * b + k / 2 + 2));
      }
    } else {
      for (int p = 0; p < 4; ++p) {
        const __m512i wq = _mm512_xor_si512(_mm512_loadu_si512(g + q + 64 * p), flip);
        isum = _mm512_dpbusd_epi32(isum, wq, PairChunk(table, 4 * b + p));
      }
    }
    const __m256i sums =
        _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
    const __m256 wd = _mm256_cvtph_ps(Load128(g + 2 * kPackRows * b));
    __m256i ints = sums;
    if constexpr (!kMin) ints = _mm256_sub_epi32(ints, _mm256_set1_epi32(kBias * act_sum[b]));
    const __m256 da = _mm256_set1_ps(act_d[b]);
    const __m256 fi = _mm256_cvtepi32_ps(ints);
    __m256 term;
    if constexpr (kMin) {
      const __m256 wm = _mm256_cvtph_ps(Load128(g + m_base + 2 * kPackRows * b));
      term = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(wd, da), fi),
                           _mm256_mul_ps(wm, _mm256_set1_ps(act_s[b])));
    } else if constexpr (kOffset == 0) {
      term = _mm256_mul_ps(fi, _mm256_mul_ps(wd, da));  // as Tile32
    } else if constexpr (kOffset == 8) {
      term = _mm256_mul_ps(_mm256_mul_ps(fi, wd), da);
    } else {
      term = _mm256_mul_ps(_mm256_mul_ps(wd, da), fi);
    }
    acc = _mm256_add_ps(acc, term);
  }
  _mm256_storeu_ps(out, acc);
}

// ---- Q4_K against Q8_K ----

// g0 and g1 are the matrix's own groups. kStored: their quants are read
// there (PrefetchNextPair), else from the pair buffer qp. kFive: Q5_K, a
// fifth-bit vector per 32-element group after Q4_K's super-block.
template <int T, bool kStored = false, bool kFive = false>
void TileQ4_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
              const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  [[maybe_unused]] const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next_pair(w, 2, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) PrefetchNextPair(next_pair, g0, g1, s);
    constexpr size_t kSbBytes = kFive ? kQ5KPackedBytes : kQ4KPackedBytes;
    const uint8_t* sb0 = g0 + s * kSbBytes;
    const uint8_t* sb1 = g1 + s * kSbBytes;
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    // The pair buffer's ready scale and min vectors (kStored: built here).
    [[maybe_unused]] const uint8_t* ready = nullptr;
    if constexpr (!kStored) ready = qp + Q4_KPairScales(w.cols / kQkK, s);
    const auto scale = [&](int g) {
      if constexpr (kStored) return Q4_KScaleVector(sb0, sb1, g);
      return PairChunk(ready, g);
    };
    const auto mins = [&](int g) {
      if constexpr (kStored) return Q4_KMinVector(sb0, sb1, g);
      return PairChunk(ready, 8 + g);
    };
    for (int g = 0; g < 8; ++g) {  // 32-element groups: low nibbles of pair g/2, then high
      const int p = g / 2, shift = 4 * (g % 2);
      __m512i dot[T];
      for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
      [[maybe_unused]] __m512i fifth;
      if constexpr (kStored && kFive) {
        fifth = Load2(sb0 + kQ5KPackedH + 32 * g, sb1 + kQ5KPackedH + 32 * g);
      }
      for (int c = 0; c < 8; ++c) {
        __m512i nib;
        if constexpr (kStored) {
          const size_t off = kQ4KPackedQ + 256 * p + 32 * c;
          const __m512i v = Load2(sb0 + off, sb1 + off);
          nib = _mm512_and_si512(shift ? _mm512_srli_epi16(v, 4) : v, m4);
          if constexpr (kFive) nib = _mm512_or_si512(nib, FifthBits(fifth, c));
        } else {
          nib = PairChunk(qp, 64 * s + 8 * g + c);
        }
        for (int t = 0; t < T; ++t) {
          dot[t] = DpbusdBcast(dot[t], nib, act[t][s].qs + 32 * g + 4 * c);
        }
      }
      // Each row's scale zero-extended to its i32 lane.
      const __m512i sc = scale(g);
      for (int t = 0; t < T; ++t)
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], sc));
    }
    const __m512 d = Halves16(sb0 + kQ4KPackedD, sb1 + kQ4KPackedD);
    const __m512 dmin = Halves16(sb0 + kQ4KPackedDmin, sb1 + kQ4KPackedDmin);
    for (int t = 0; t < T; ++t) {
      // sum_g m_g * (bsums[2g] + bsums[2g + 1]): each m doubled into an i16
      // pair, so VPDPWSSD against the broadcast bsum pair adds it per row.
      __m512i msum = _mm512_setzero_si512();
      for (int g = 0; g < 8; ++g) {
        msum = _mm512_dpwssd_epi32(msum, mins(g), Bcast4(act[t][s].bsums + 2 * g));
      }
      const __m512 da = _mm512_set1_ps(act[t][s].d);
      const __m512 x =
          _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum[t])),
                        _mm512_mul_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(msum)));
      acc[t] = _mm512_add_ps(acc[t], x);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- Q6_K against Q8_K ----

// g0 and g1 are the matrix's own stored groups. kStored: their quants are
// unpacked in registers (PrefetchNextPair), else read from the pair buffer qp.
template <int T, bool kStored = false>
void TileQ6_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
              const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next_pair(w, 2, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) PrefetchNextPair(next_pair, g0, g1, s);
    const uint8_t* sb0 = g0 + s * kQ6KStoredBytes;
    const uint8_t* sb1 = g1 + s * kQ6KStoredBytes;
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      // i16 lanes 2r, 2r + 1: row r's scales of groups 2p, 2p + 1.
      const size_t sc_off = kQ6KPackedSc + 16 * p;
      const __m512i pair = _mm512_cvtepi8_epi16(Load2x16(sb0 + sc_off, sb1 + sc_off));
      // The stored q is q + 32: subtract 32 * sum_g sc_g * bsums_g, per pair.
      const __m512i neg32 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 5));
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm512_dpwssd_epi32(isum[t], neg32, Bcast4(act[t][s].bsums + 2 * p));
      }
      for (int k = 0; k < 2; ++k) {
        // Row r's scale of group 2p + k, sign-extended to its i32 lane.
        const __m512i sc = k == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                  : _mm512_srai_epi32(pair, 16);
        const int g = 2 * p + k;
        __m512i dot[T];
        for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
        __m512i wq[4];
        if constexpr (kStored) {
          const size_t off = kQ6KStoredGroups + kQ6KStoredGroupBytes * g;
          Q6_KChunks(sb0 + off, sb1 + off, wq);
        } else {
          for (int c = 0; c < 4; ++c) wq[c] = PairChunk(qp, 64 * s + 4 * g + c);
        }
        for (int c = 0; c < 4; ++c) {
          for (int t = 0; t < T; ++t) {
            dot[t] = DpbusdBcast(dot[t], wq[c], act[t][s].qs + 16 * g + 4 * c);
          }
        }
        for (int t = 0; t < T; ++t)
          isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], sc));
      }
    }
    const __m512 d = Halves16(sb0 + kQ6KPackedD, sb1 + kQ6KPackedD);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[t][s].d)),
                                                   _mm512_cvtepi32_ps(isum[t])));
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- one token, one group (decode): Q4_K and Q6_K ----

// 8 u8 (one per row) as 16 i16, each value twice (Dup8x2's lower half).
inline __m256i Dup8(const uint8_t* p) {
  const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(x, x));
}
inline __m256i Bcast4x8(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// TileQ4_K for one token and one group: each 64-byte vector of a nibble
// pair (chunks 2j, 2j + 1) serves both its 32-element groups, the low
// nibbles and the high ones (Q5_K, kFive: with their fifth bits).
template <bool kFive>
void TileQ4_KOne(const PackedMatrix& w, const uint8_t* g, const GemmActivations& a, int64_t t0,
                 const uint8_t* table, float* out) {
  const BlockQ8_K* act = reinterpret_cast<const BlockQ8_K*>(a.rows + t0 * a.stride);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const int64_t nsb = w.cols / kQkK;
  const GroupPrefetch next(w, 2, nsb);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * (kFive ? kQ5KPackedBytes : kQ4KPackedBytes);
    __m512i isum = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {  // 32-element groups 2p (low nibbles) and 2p + 1 (high)
      __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
      [[maybe_unused]] __m512i h_lo, h_hi;  // their fifth bits, in both halves
      if constexpr (kFive) {
        h_lo = _mm512_broadcast_i64x4(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(sb + kQ5KPackedH + 64 * p)));
        h_hi = _mm512_broadcast_i64x4(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(sb + kQ5KPackedH + 64 * p + 32)));
      }
      for (int j = 0; j < 4; ++j) {
        const __m512i v =
            _mm512_loadu_si512(reinterpret_cast<const void*>(sb + kQ4KPackedQ + 256 * p + 64 * j));
        __m512i q_lo = _mm512_and_si512(v, m4);
        __m512i q_hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if constexpr (kFive) {
          q_lo = _mm512_or_si512(q_lo, FifthBits2(h_lo, 2 * j));
          q_hi = _mm512_or_si512(q_hi, FifthBits2(h_hi, 2 * j));
        }
        lo = _mm512_dpbusd_epi32(lo, q_lo, PairChunk(table, 32 * s + 8 * p + j));
        hi = _mm512_dpbusd_epi32(hi, q_hi, PairChunk(table, 32 * s + 8 * p + 4 + j));
      }
      const uint8_t* sc = sb + kQ4KPackedSc + 16 * p;  // groups 2p and 2p + 1
      isum =
          _mm512_add_epi32(isum, _mm512_mullo_epi32(lo, _mm512_and_si512(Dup8x2(sc, sc), low16)));
      isum = _mm512_add_epi32(
          isum, _mm512_mullo_epi32(hi, _mm512_and_si512(Dup8x2(sc + 8, sc + 8), low16)));
    }
    const __m256i sums =
        _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
    __m256i msum = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
      msum =
          _mm256_dpwssd_epi32(msum, Dup8(sb + kQ4KPackedM + 8 * k), Bcast4x8(act[s].bsums + 2 * k));
    }
    const __m256 d = _mm256_cvtph_ps(Load128(sb + kQ4KPackedD));
    const __m256 dmin = _mm256_cvtph_ps(Load128(sb + kQ4KPackedDmin));
    const __m256 da = _mm256_set1_ps(act[s].d);
    const __m256 x =
        _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(sums)),
                      _mm256_mul_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(msum)));
    acc = _mm256_add_ps(acc, x);
  }
  _mm256_storeu_ps(out, acc);
}

// TileQ6_K for one token and one stored group: a 16-element group's four
// chunks as two vectors (chunks 4k, 4k + 1 and 4k + 2, 4k + 3), each half
// joined from its nibbles and high bits with its own shift counts.
void TileQ6_KOne(const PackedMatrix& w, const uint8_t* g, const GemmActivations& a, int64_t t0,
                 const uint8_t* table, float* out) {
  const BlockQ8_K* act = reinterpret_cast<const BlockQ8_K*>(a.rows + t0 * a.stride);
  // As Q6_KChunks: chunk 4k's nibbles as they are, 4k + 1's shifted down 4;
  // high bits up 4 and up 2 (chunks 4k, 4k + 1), as they are and down 2
  // (chunks 4k + 2, 4k + 3).
  const __m512i nib_shift = HalfCounts(0, 4), high_up = HalfCounts(4, 2),
                high_down = HalfCounts(0, 2);
  const auto merge = JoinQ6;
  const int64_t nsb = w.cols / kQkK;
  const GroupPrefetch next(w, 2, nsb);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kQ6KStoredBytes;
    __m512i isum = _mm512_setzero_si512();
    __m256i bias = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      const uint8_t* sc_p = sb + kQ6KPackedSc + 16 * p;
      const __m512i pair = _mm512_cvtepi8_epi16(Load2x16(sc_p, sc_p));
      // The stored q is q + 32: subtract 32 * sum_g sc_g * bsums_g (8 lanes).
      const __m512i neg32 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 5));
      bias =
          _mm256_dpwssd_epi32(bias, _mm512_castsi512_si256(neg32), Bcast4x8(act[s].bsums + 2 * p));
      for (int k = 0; k < 2; ++k) {
        const __m512i sc = k == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                  : _mm512_srai_epi32(pair, 16);
        const int gi = 2 * p + k;
        const uint8_t* q = sb + kQ6KStoredGroups + kQ6KStoredGroupBytes * gi;
        const __m512i h = Both32(q + 64);
        const __m512i q01 =
            merge(_mm512_srlv_epi16(Both32(q), nib_shift), _mm512_sllv_epi16(h, high_up));
        const __m512i q23 =
            merge(_mm512_srlv_epi16(Both32(q + 32), nib_shift), _mm512_srlv_epi16(h, high_down));
        __m512i dot =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), q01, PairChunk(table, 32 * s + 2 * gi));
        dot = _mm512_dpbusd_epi32(dot, q23, PairChunk(table, 32 * s + 2 * gi + 1));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, sc));
      }
    }
    const __m256i sums = _mm256_add_epi32(
        _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1)), bias);
    const __m256 d = _mm256_cvtph_ps(Load128(sb + kQ6KPackedD));
    acc = _mm256_add_ps(
        acc, _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[s].d)), _mm256_cvtepi32_ps(sums)));
  }
  _mm256_storeu_ps(out, acc);
}

// Every type's kernels, for Gemm (gemm_packed_avx512_common.h); kDuoType:
// its few-token kernels are gemm_packed_duo_avx512.cc's for that type.
template <int T>
struct Q8_0Kernel : ActQ8_0 {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ8_0;
  static constexpr auto ExpandPair = ExpandPair32<0>;
  static constexpr auto Run = Tile32<0, T>;
  static constexpr auto RunStored = Tile32<0, T, true>;
  static constexpr auto RunOne = Tile32One<0>;
};
template <int T>
struct Q5_0Kernel : ActQ8_0 {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ5_0;
  static constexpr auto ExpandPair = ExpandPair32<16>;
  static constexpr auto Run = Tile32<16, T>;
  static constexpr auto RunStored = Tile32<16, T, true>;
  static constexpr auto RunOne = Tile32One<16>;
};
template <int T>
struct Q4_0Kernel : ActQ8_0 {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ4_0;
  static constexpr auto ExpandPair = ExpandPair32<8>;
  static constexpr auto Run = Tile32<8, T>;
  static constexpr auto RunStored = Tile32<8, T, true>;
  static constexpr auto RunOne = Tile32One<8>;
};
template <int T>
struct Q5_1Kernel : ActQ8_1 {
  static constexpr auto ExpandPair = ExpandPair32<16, true>;
  static constexpr auto Run = Tile32<16, T, false, true>;
  static constexpr auto RunStored = Tile32<16, T, true, true>;
  static constexpr auto RunOne = Tile32One<16, true>;
};
template <int T>
struct Q4_1Kernel : ActQ8_1 {
  static constexpr auto ExpandPair = ExpandPair32<8, true>;
  static constexpr auto Run = Tile32<8, T, false, true>;
  static constexpr auto RunStored = Tile32<8, T, true, true>;
  static constexpr auto RunOne = Tile32One<8, true>;
};
template <int T>
struct Iq4NlKernel : ActQ8_0 {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kIQ4_NL;
  static constexpr auto ExpandPair = ExpandPair32<kIq4NlOffset>;
  static constexpr auto Run = Tile32<kIq4NlOffset, T>;
  static constexpr auto RunStored = Tile32<kIq4NlOffset, T, true>;
  static constexpr auto RunOne = Tile32One<kIq4NlOffset>;
};
template <int T>
struct Q4_KKernel : ActQ8_K {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ4_K;
  static size_t PairBufferBytes(int64_t cols) {
    return static_cast<size_t>(cols / kQkK) * (kQ4KPairQuantBytes + kQ4KPairScaleBytes);
  }
  static constexpr auto ExpandPair = ExpandPairK4<false>;
  static constexpr auto Run = TileQ4_K<T>;
  static constexpr auto RunStored = TileQ4_K<T, true>;
  static constexpr auto RunOne = TileQ4_KOne<false>;
};
template <int T>
struct Q5_KKernel : Q4_KKernel<T> {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ5_K;
  static constexpr auto ExpandPair = ExpandPairK4<true>;
  static constexpr auto Run = TileQ4_K<T, false, true>;
  static constexpr auto RunStored = TileQ4_K<T, true, true>;
  static constexpr auto RunOne = TileQ4_KOne<true>;
};
template <int T>
struct Q6_KKernel : ActQ8_K {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ6_K;
  static constexpr auto ExpandPair = ExpandPairQ6_K;
  static constexpr auto Run = TileQ6_K<T>;
  static constexpr auto RunStored = TileQ6_K<T, true>;
  static constexpr auto RunOne = TileQ6_KOne;
};

}  // namespace

GemmPackedFn Avx512VnniGemmPacked(quant::TensorType type) {
  using TT = quant::TensorType;
  switch (type) {
    case TT::kQ8_0:
      return Gemm<Q8_0Kernel>;
    case TT::kQ5_0:
      return Gemm<Q5_0Kernel>;
    case TT::kQ4_0:
      return Gemm<Q4_0Kernel>;
    case TT::kQ5_1:
      return Gemm<Q5_1Kernel>;
    case TT::kQ4_1:
      return Gemm<Q4_1Kernel>;
    case TT::kQ4_K:
      return Gemm<Q4_KKernel>;
    case TT::kQ5_K:
      return Gemm<Q5_KKernel>;
    case TT::kQ6_K:
      return Gemm<Q6_KKernel>;
    case TT::kIQ4_NL:
      return Gemm<Iq4NlKernel>;
    case TT::kIQ4_XS:
      return Avx512VnniGemmPackedIq4Xs();
    case TT::kQ3_K:
      return Avx512VnniGemmPackedQ3_K();
    case TT::kQ2_K:
      return Avx512VnniGemmPackedQ2_K();
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512 VNNI

namespace ellm::kernels::internal {
GemmPackedFn Avx512VnniGemmPacked(quant::TensorType) { return nullptr; }
}  // namespace ellm::kernels::internal

#endif

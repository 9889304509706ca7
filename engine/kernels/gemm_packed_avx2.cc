// AVX2 packed GEMM (x86-64-v3, our compile baseline). A register tile is one
// group of 8 rows x kTile tokens: each 32-byte weight chunk is loaded (and
// unpacked) once and meets kTile broadcast 4-byte activation groups, so the
// 8 row sums of a token build up in the lanes of one register.
//
// Integer bounds (VPMADDUBSW adds two u8 * i8 products into a saturating
// i16, so we keep every i16 sum below 32767 by construction; activations are
// in [-127, 127], see quant.h):
//   Q5_0: q in [0, 31]: a pair is at most 2 * 31 * 127 = 7874; four chunks
//         are summed in i16 (31496) before VPMADDWD widens them.
//   Q4_0: q in [0, 15]: likewise (15240).
//   Q8_0: signed weights: |w| as unsigned times a with w's sign (VPSIGNB),
//         a pair is at most 2 * 128 * 127 = 32512, widened at once.
//   Q4_K: q in [0, 15]: 8 chunks (one 32-element group) sum to at most
//         8 * 3810 = 30480 in i16; times a 6-bit scale in VPMADDWD.
//   Q5_K: q in [0, 31]: as Q5_0, 4 chunks in i16 (31496), then VPMADDWD.
//   Q6_K: q in [0, 63]: a pair is at most 16002, two chunks 32004; each
//         half of a 16-element group is scaled by VPMADDWD on its own.
//   Q3_K: u = q + 4 in [0, 7], Q6_K's path with a bias of 4.
// The offsets (q - 16, q - 8, Q6_K's q - 32) and Q4_K's mins are applied
// once per block through the activations' block sums (Q8_0: SummarizeQ8_0;
// Q8_K: its bsums), exactly, in i32.
// Within a super-block the i32 sums cannot overflow: Q4_K at most
// 8 * 63 * 32 * 15 * 127 ~ 3.1e7 (Q5_K with 31: 6.4e7), Q6_K 16 * 128 * 16 * 63 * 127 ~ 2.6e8.
// The float work per block is the scalar reference's, operation for
// operation, in each lane (built with -ffp-contract=off so that no multiply
// and add fuse): results equal RefVecDot bit for bit.
#include "kernels/gemm_packed_isa.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "quant/iq4_nl.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

namespace ellm::kernels::internal {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQkK;

// Tokens per register tile: 4 keeps the weight chunks, i16/i32 partial sums
// and f32 accumulators of a tile within the 16 YMM registers (or nearly).
constexpr int kTile = 4;
// Tokens per cache tile: one pass over a thread's row groups reuses this many
// activation rows from L2 (64 rows of 2048 Q8_K elements are ~150 KB).
constexpr int64_t kTokenChunk = 64;

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline __m256 Halves8(const void* p) { return _mm256_cvtph_ps(Load128(p)); }
// Four activation bytes broadcast to all eight 32-bit lanes.
inline __m256i Bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}
// 8 u8 (one per row) as 16 i16: each twice, the VPMADDWD operand of a row.
inline __m256i Dup8(const uint8_t* p) {
  const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(x, x));
}
inline __m256i Widen(__m256i pairs16) { return _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1)); }

// The fifth bits of chunk c (0-7) as 0x10 or 0 per byte, from the block's
// vector h whose byte i holds bit c of byte i of every chunk (16-bit shifts
// move bit c to bit 4 within each byte).
inline __m256i FifthBits(__m256i h, int c) {
  const __m128i n = _mm_cvtsi32_si128(c < 4 ? 4 - c : c - 4);
  const __m256i moved = c < 4 ? _mm256_sll_epi16(h, n) : _mm256_srl_epi16(h, n);
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}
// Chunk c (0-7, wide bytes) of the stored Q5_0 (kQ5) or Q4_0 block at q:
// nibble vector c % 4's low or high nibbles, and for Q5_0 the fifth bits
// from `fifth`, the block's vector of them.
template <bool kQ5>
inline __m256i StoredChunk(const uint8_t* q, __m256i fifth, int c) {
  const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * (c % 4)));
  const __m256i nib = _mm256_and_si256(c < 4 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
  if constexpr (kQ5) return _mm256_or_si256(nib, FifthBits(fifth, c));
  return nib;
}
// The table's values (kIq4NlValues) of 32 bytes of 4-bit indices (VPSHUFB).
inline __m256i Iq4Values(__m256i idx) {
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(
                                 reinterpret_cast<const __m128i*>(quant::kIq4NlValues))),
                             idx);
}
// The 4 chunks (wide bytes, 6-bit q) of one 16-element group of the stored
// Q6_K layout at p: two nibble vectors and one of high bit pairs.
inline void Q6_KChunks(const uint8_t* p, __m256i q[4]) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
  const __m256i v0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i v1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32));
  const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 64));
  q[0] = _mm256_or_si256(_mm256_and_si256(v0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
  q[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v0, 4), m4),
                         _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
  q[2] = _mm256_or_si256(_mm256_and_si256(v1, m4), _mm256_and_si256(h, m2));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v1, 4), m4),
                         _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
}

// Q3_K's scales sc - 32 of pair p of 16-element groups (byte 2r + k: row
// r, group 2p + k) from the stored super-block sb: low nibbles split, high
// bit pairs found by comparing each byte's two bits (byte j holds its pair
// at bits 2(j % 4) of stored byte j / 4).
inline __m128i Q3_KScales16(const uint8_t* sb, int p) {
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i nib =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb + kQ3KStoredScLow + 8 * p));
  const __m128i low =
      _mm_unpacklo_epi8(_mm_and_si128(nib, m4), _mm_and_si128(_mm_srli_epi16(nib, 4), m4));
  int32_t hb;
  std::memcpy(&hb, sb + kQ3KStoredScHigh + 4 * p, 4);
  const __m128i x = _mm_shuffle_epi8(_mm_cvtsi32_si128(hb),
                                     _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
  const __m128i b0 = _mm_setr_epi8(1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64);
  const __m128i b1 = _mm_add_epi8(b0, b0);
  const __m128i h0 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(x, b0), b0), _mm_set1_epi8(0x10));
  const __m128i h1 = _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(x, b1), b1), _mm_set1_epi8(0x20));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_or_si128(h0, h1)), _mm_set1_epi8(32));
}
// Bits at `from` moved to bit `to` (0-7) in every byte of v, by a 16-bit
// shift (the caller masks the bits it keeps).
inline __m256i MoveBits(__m256i v, int from, int to) {
  const __m128i n = _mm_cvtsi32_si128(from > to ? from - to : to - from);
  return from > to ? _mm256_srl_epi16(v, n) : _mm256_sll_epi16(v, n);
}
// The 4 chunks (wide bytes, u in [0, 7]) of 16-element group g of the
// stored Q3_K super-block sb.
inline void Q3_KChunks(const uint8_t* sb, int g, __m256i q[4]) {
  const __m256i low = Load256(sb + kQ3KStoredLow + 32 * g);
  const __m256i high = Load256(sb + kQ3KStoredHigh + 32 * (g / 2));
  for (int j = 0; j < 4; ++j) {
    q[j] =
        _mm256_or_si256(_mm256_and_si256(MoveBits(low, 2 * j, 0), _mm256_set1_epi8(3)),
                        _mm256_and_si256(MoveBits(high, 4 * (g % 2) + j, 2), _mm256_set1_epi8(4)));
  }
}

// The 4 chunks (wide bytes, q in [0, 3]) of 16-element group g of the
// stored Q2_K super-block sb.
inline void Q2_KChunks(const uint8_t* sb, int g, __m256i q[4]) {
  const __m256i low = Load256(sb + kQ2KPackedQ + 32 * g);
  for (int j = 0; j < 4; ++j) q[j] = _mm256_and_si256(MoveBits(low, 2 * j, 0), _mm256_set1_epi8(3));
}

// ---- Q8_0, Q5_0, Q4_0 against Q8_0 ----

// kOffset: 0 for Q8_0 (signed quants), else the value subtracted from the
// stored unsigned quant (16 for Q5_0, 8 for Q4_0). kStored: `group` is the
// matrix's own stored group (Q5_0, Q4_0, IQ4_NL: unpacked in registers;
// GroupPrefetch), else a wide copy. kLut (IQ4_NL, with kOffset 0): the
// stored group is Q4_0's of table indices, the wide one Q8_0's of their
// signed values, which take Q8_0's path. kMin (Q4_1 with kOffset 8, Q5_1
// with 16): the quants are as Q4_0's / Q5_0's but nothing is subtracted; the
// m table follows the d table, the activations are Q8_1 and each block adds
// m * s (as DotQ4_1 / DotQ5_1).
template <int kOffset, int T, bool kStored = false, bool kLut = false, bool kMin = false>
void Tile32(const PackedMatrix& w, const uint8_t* group, const GemmActivations& a, int64_t t0,
            float* out, int64_t out_stride) {
  const int64_t nb = w.cols / 32;
  const uint8_t* d = group;
  const uint8_t* m = group + PackedScaleBytes32(nb);
  const uint8_t* qs = group + PackedScaleBytes32(nb) * (kMin ? 2 : 1);
  using ActBlock = std::conditional_t<kMin, quant::BlockQ8_1, BlockQ8_0>;
  const int8_t* act[T];
  const float* act_d[T];
  [[maybe_unused]] const int32_t* act_sum[T];
  [[maybe_unused]] const float* act_s[T];
  for (int t = 0; t < T; ++t) {
    act[t] = reinterpret_cast<const ActBlock*>(a.rows + (t0 + t) * a.stride)->qs;
    act_d[t] = a.block_d + (t0 + t) * nb;
    if constexpr (kMin) {
      act_s[t] = a.block_s + (t0 + t) * nb;
    } else {
      act_sum[t] = a.block_sum + (t0 + t) * nb;
    }
  }
  constexpr int64_t kActBlock = sizeof(ActBlock);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  // Q8_0's stored layout is its wide one.
  constexpr bool kUnpack = kStored && (kOffset != 0 || kLut);
  constexpr size_t kBlock = !kUnpack        ? kPackedBlock32QuantBytes
                            : kOffset == 16 ? kStoredBlockQ5_0
                                            : kStoredBlockQ4_0;
  [[maybe_unused]] const GroupPrefetch next(w, 1, nb);
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (kStored) next(group, b);
    const uint8_t* q = qs + b * kBlock;
    __m256i isum[T];
    __m256i fifth = _mm256_setzero_si256();
    if constexpr (kUnpack && kOffset == 16) fifth = Load256(q + 128);
    for (int h = 0; h < 2; ++h) {
      __m256i wq[4];
      for (int c = 0; c < 4; ++c) {
        if constexpr (kUnpack) {
          wq[c] = StoredChunk<kOffset == 16>(q, fifth, 4 * h + c);
          if constexpr (kLut) wq[c] = Iq4Values(wq[c]);
        } else {
          wq[c] = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * (4 * h + c)));
        }
      }
      for (int t = 0; t < T; ++t) {
        const int8_t* ab = act[t] + b * kActBlock + 16 * h;
        __m256i part;
        if constexpr (kOffset == 0) {
          part = _mm256_setzero_si256();
          for (int c = 0; c < 4; ++c) {
            const __m256i s = _mm256_sign_epi8(Bcast4(ab + 4 * c), wq[c]);
            part = _mm256_add_epi32(part, Widen(_mm256_maddubs_epi16(_mm256_abs_epi8(wq[c]), s)));
          }
        } else {
          const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(wq[0], Bcast4(ab)),
                                               _mm256_maddubs_epi16(wq[1], Bcast4(ab + 4)));
          const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(wq[2], Bcast4(ab + 8)),
                                               _mm256_maddubs_epi16(wq[3], Bcast4(ab + 12)));
          part = Widen(_mm256_add_epi16(s01, s23));
        }
        isum[t] = h == 0 ? part : _mm256_add_epi32(isum[t], part);
      }
    }
    const __m256 wd = Halves8(d + 2 * kPackRows * b);
    [[maybe_unused]] __m256 wm;
    if constexpr (kMin) wm = Halves8(m + 2 * kPackRows * b);
    for (int t = 0; t < T; ++t) {
      __m256i ints = isum[t];
      if constexpr (kOffset != 0 && !kMin) {
        ints = _mm256_sub_epi32(ints, _mm256_set1_epi32(kOffset * act_sum[t][b]));
      }
      const __m256 da = _mm256_broadcast_ss(act_d[t] + b);
      const __m256 fi = _mm256_cvtepi32_ps(ints);
      __m256 term;
      if constexpr (kMin) {  // as DotQ4_1, DotQ5_1
        term = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(wd, da), fi),
                             _mm256_mul_ps(wm, _mm256_broadcast_ss(act_s[t] + b)));
      } else if constexpr (kOffset == 0) {
        term = _mm256_mul_ps(fi, _mm256_mul_ps(wd, da));  // as DotQ8_0
      } else if constexpr (kOffset == 8) {
        term = _mm256_mul_ps(_mm256_mul_ps(fi, wd), da);  // as DotQ4_0
      } else {
        term = _mm256_mul_ps(_mm256_mul_ps(wd, da), fi);  // as DotQ5_0
      }
      acc[t] = _mm256_add_ps(acc[t], term);
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- Q4_K against Q8_K ----

// kStored: `group` is the matrix's own group (GroupPrefetch). kFive: Q5_K,
// Q4_K's super-block with a fifth-bit vector per 32-element group after it.
template <int T, bool kStored = false, bool kFive = false>
void TileQ4_K(const PackedMatrix& w, const uint8_t* group, const GemmActivations& a, int64_t t0,
              float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next(w, 1, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) next(group, s);
    const uint8_t* sb = group + s * (kFive ? kQ5KPackedBytes : kQ4KPackedBytes);
    const uint8_t* q = sb + kQ4KPackedQ;
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {  // 32-element groups: low nibbles of pair g/2, then high
      const int p = g / 2, shift = 4 * (g % 2);
      const __m256i sc = Dup8(sb + kQ4KPackedSc + 8 * g);
      [[maybe_unused]] __m256i fifth;
      if constexpr (kFive) fifth = Load256(sb + kQ5KPackedH + 32 * g);
      // Q4_K sums a group's 8 chunks in i16 (30480); Q5_K's 5-bit q two
      // halves of 4 chunks (31496) each, widened on their own.
      constexpr int kRun = kFive ? 4 : 8;
      for (int c0 = 0; c0 < 8; c0 += kRun) {
        __m256i s16[T];
        for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
        for (int c = c0; c < c0 + kRun; ++c) {
          const __m256i v =
              _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 256 * p + 32 * c));
          __m256i nib = _mm256_and_si256(shift ? _mm256_srli_epi16(v, 4) : v, m4);
          if constexpr (kFive) nib = _mm256_or_si256(nib, FifthBits(fifth, c));
          for (int t = 0; t < T; ++t) {
            const __m256i ab = Bcast4(act[t][s].qs + 32 * g + 4 * c);
            s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(nib, ab));
          }
        }
        for (int t = 0; t < T; ++t)
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
      }
    }
    const __m256 d = Halves8(sb + kQ4KPackedD);
    const __m256 dmin = Halves8(sb + kQ4KPackedDmin);
    for (int t = 0; t < T; ++t) {
      // sum_g m_g * (bsums[2g] + bsums[2g + 1]): each m doubled into an i16
      // pair, so VPMADDWD against the broadcast bsum pair gives it per row.
      __m256i msum = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i m = Dup8(sb + kQ4KPackedM + 8 * g);
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(m, Bcast4(act[t][s].bsums + 2 * g)));
      }
      const __m256 da = _mm256_set1_ps(act[t][s].d);
      const __m256 x =
          _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(isum[t])),
                        _mm256_mul_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(msum)));
      acc[t] = _mm256_add_ps(acc[t], x);
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- IQ4_XS against Q8_K ----

// kStored: `group` is the matrix's own stored group, unpacked in registers
// (GroupPrefetch), else a wide copy (signed values). Signed weights, so each
// chunk's pairs go through VPSIGNB (at most 2 * 127 * 127 = 32258 in i16)
// and are widened at once by VPMADDWD against the row's ls - 32 (i16 pairs):
// a 32-element group is at most 32 * 32 * 127 * 127, a super-block 8 times
// that (1.3e8) in i32. Float work as DotIq4Xs.
template <int T, bool kStored = false>
void TileIq4Xs(const PackedMatrix& w, const uint8_t* group, const GemmActivations& a, int64_t t0,
               float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next(w, 1, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) next(group, s);
    const uint8_t* sb = group + s * (kStored ? kIq4XsStoredBytes : kIq4XsPackedBytes);
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
      // i16 lanes 2r, 2r + 1: row r's ls - 32.
      const __m128i sc8 =
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb + kIq4XsPackedSc + 8 * g));
      const __m256i sc = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sc8, sc8));
      for (int h = 0; h < 2; ++h) {
        __m256i wq[4];
        for (int c = 0; c < 4; ++c) {
          if constexpr (kStored) {
            wq[c] = Iq4Values(StoredChunk<false>(sb + kIq4XsPackedQ + kIq4XsStoredGroupBytes * g,
                                                 _mm256_setzero_si256(), 4 * h + c));
          } else {
            wq[c] = _mm256_load_si256(
                reinterpret_cast<const __m256i*>(sb + kIq4XsPackedQ + 256 * g + 32 * (4 * h + c)));
          }
        }
        for (int c = 0; c < 4; ++c) {
          const __m256i w_abs = _mm256_abs_epi8(wq[c]);
          for (int t = 0; t < T; ++t) {
            const __m256i ab =
                _mm256_sign_epi8(Bcast4(act[t][s].qs + 32 * g + 16 * h + 4 * c), wq[c]);
            isum[t] =
                _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, ab), sc));
          }
        }
      }
    }
    const __m256 d = Halves8(sb + kIq4XsPackedD);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[t][s].d)),
                                                   _mm256_cvtepi32_ps(isum[t])));
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- Q6_K against Q8_K ----

// kStored: `group` is the matrix's own stored group, unpacked in registers
// (GroupPrefetch), else a wide copy. kQ3: Q3_K, Q6_K's wide layout with u =
// q + 4 (its own stored layout): the bias is 4, not 32.
template <int T, bool kStored = false, bool kQ3 = false>
void TileQ6_K(const PackedMatrix& w, const uint8_t* group, const GemmActivations& a, int64_t t0,
              float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next(w, 1, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) next(group, s);
    constexpr size_t kStoredBytes = kQ3 ? kQ3KStoredBytes : kQ6KStoredBytes;
    const uint8_t* sb = group + s * (kStored ? kStoredBytes : kQ6KPackedBytes);
    const uint8_t* q = sb + kQ6KPackedQ;
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      // i16 lanes 2r, 2r + 1: row r's scales of groups 2p, 2p + 1.
      const __m256i pair = _mm256_cvtepi8_epi16(
          kQ3 && kStored ? Q3_KScales16(sb, p) : Load128(sb + kQ6KPackedSc + 16 * p));
      // The stored q is q + 32 (Q3_K: q + 4): subtract 32 * sum_g sc_g *
      // bsums_g, per pair.
      const __m256i neg32 =
          _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(pair, kQ3 ? 2 : 5));
      for (int t = 0; t < T; ++t) {
        isum[t] =
            _mm256_add_epi32(isum[t], _mm256_madd_epi16(neg32, Bcast4(act[t][s].bsums + 2 * p)));
      }
      for (int k = 0; k < 2; ++k) {
        const __m256i sc = k == 0
                               ? _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xa0), 0xa0)
                               : _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xf5), 0xf5);
        const int g = 2 * p + k;
        __m256i wq[4];
        if constexpr (kStored && kQ3) {
          Q3_KChunks(sb, g, wq);
        } else if constexpr (kStored) {
          Q6_KChunks(sb + kQ6KStoredGroups + kQ6KStoredGroupBytes * g, wq);
        } else {
          for (int c = 0; c < 4; ++c)
            wq[c] = _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * (4 * g + c)));
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* ab = act[t][s].qs + 16 * g;
          const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(wq[0], Bcast4(ab)),
                                               _mm256_maddubs_epi16(wq[1], Bcast4(ab + 4)));
          const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(wq[2], Bcast4(ab + 8)),
                                               _mm256_maddubs_epi16(wq[3], Bcast4(ab + 12)));
          isum[t] = _mm256_add_epi32(
              isum[t], _mm256_add_epi32(_mm256_madd_epi16(s01, sc), _mm256_madd_epi16(s23, sc)));
        }
      }
    }
    const __m256 d = Halves8(sb + kQ6KPackedD);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[t][s].d)),
                                                   _mm256_cvtepi32_ps(isum[t])));
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- Q2_K against Q8_K ----

// kStored: `group` is the matrix's own stored group, unpacked in registers
// (GroupPrefetch), else a wide copy. q in [0, 3]: every i16 and i32 sum is
// far from overflow. Each pair of 16-element groups' scale bytes gives the
// scales (low nibbles) for VPMADDWD on the dots and the mins (high
// nibbles) for VPMADDWD on the bsums. Float work as DotQ2_K.
template <int T, bool kStored = false>
void TileQ2_K(const PackedMatrix& w, const uint8_t* group, const GemmActivations& a, int64_t t0,
              float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next(w, 1, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) next(group, s);
    const uint8_t* sb = group + s * (kStored ? kQ2KStoredBytes : kQ2KPackedBytes);
    __m256i isum[T], msum[T];
    for (int t = 0; t < T; ++t) isum[t] = msum[t] = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      // i16 lanes 2r, 2r + 1: row r's scales (mins) of groups 2p, 2p + 1.
      const __m128i raw = Load128(sb + kQ2KPackedSc + 16 * p);
      const __m256i pair = _mm256_cvtepu8_epi16(_mm_and_si128(raw, m4));
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
      for (int t = 0; t < T; ++t) {
        msum[t] =
            _mm256_add_epi32(msum[t], _mm256_madd_epi16(mins, Bcast4(act[t][s].bsums + 2 * p)));
      }
      for (int k = 0; k < 2; ++k) {
        const __m256i sc = k == 0
                               ? _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xa0), 0xa0)
                               : _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xf5), 0xf5);
        const int g = 2 * p + k;
        __m256i wq[4];
        if constexpr (kStored) {
          Q2_KChunks(sb, g, wq);
        } else {
          for (int c = 0; c < 4; ++c) wq[c] = Load256(sb + kQ2KPackedQ + 32 * (4 * g + c));
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* ab = act[t][s].qs + 16 * g;
          const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(wq[0], Bcast4(ab)),
                                               _mm256_maddubs_epi16(wq[1], Bcast4(ab + 4)));
          const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(wq[2], Bcast4(ab + 8)),
                                               _mm256_maddubs_epi16(wq[3], Bcast4(ab + 12)));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_add_epi16(s01, s23), sc));
        }
      }
    }
    const __m256 d = Halves8(sb + kQ2KPackedD);
    const __m256 dmin = Halves8(sb + kQ2KPackedDmin);
    for (int t = 0; t < T; ++t) {
      const __m256 da = _mm256_set1_ps(act[t][s].d);
      const __m256 x =
          _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(isum[t])),
                        _mm256_mul_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(msum[t])));
      acc[t] = _mm256_add_ps(acc[t], x);
    }
  }
  for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- stored -> wide (gemm_packed_ref.cc's Expand*, 32 bytes at a time) ----

inline void Store256(uint8_t* p, __m256i v) {
  _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}

// kLut: IQ4_NL, the wide bytes are the indices' values. kMin: Q5_1, Q4_1
// (two scale tables).
template <bool kQ5, bool kLut = false, bool kMin = false>
void Expand32(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  const int64_t nb = cols / 32;
  const size_t scales = PackedScaleBytes32(nb) * (kMin ? 2 : 1);
  std::memcpy(wide, stored, scales);
  const size_t block = kQ5 ? kStoredBlockQ5_0 : kStoredBlockQ4_0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* in = stored + scales + b * block;
    uint8_t* out = wide + scales + b * kPackedBlock32QuantBytes;
    const __m256i fifth = kQ5 ? Load256(in + 128) : _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) {
      const __m256i q = StoredChunk<kQ5>(in, fifth, c);
      Store256(out + 32 * c, kLut ? Iq4Values(q) : q);
    }
  }
}

void ExpandIq4Xs(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kIq4XsStoredBytes;
    uint8_t* out = wide + s * kIq4XsPackedBytes;
    for (size_t k = 0; k < kIq4XsPackedQ; k += 32) Store256(out + k, Load256(in + k));
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = in + kIq4XsPackedQ + kIq4XsStoredGroupBytes * g;
      for (int c = 0; c < 8; ++c) {
        Store256(out + kIq4XsPackedQ + 256 * g + 32 * c,
                 Iq4Values(StoredChunk<false>(q, _mm256_setzero_si256(), c)));
      }
    }
  }
}

void ExpandQ2_K(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kQ2KStoredBytes;
    uint8_t* out = wide + s * kQ2KPackedBytes;
    for (size_t k = 0; k < kQ2KPackedQ; k += 32) Store256(out + k, Load256(in + k));
    for (int g = 0; g < 16; ++g) {
      __m256i q[4];
      Q2_KChunks(in, g, q);
      for (int j = 0; j < 4; ++j) Store256(out + kQ2KPackedQ + 32 * (4 * g + j), q[j]);
    }
  }
}

void ExpandQ3_K(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kQ3KStoredBytes;
    uint8_t* out = wide + s * kQ6KPackedBytes;
    Store256(out, _mm256_inserti128_si256(_mm256_castsi128_si256(Load128(in)), _mm_setzero_si128(),
                                          1));  // d, then zero padding
    for (int p = 0; p < 8; ++p) {
      _mm_store_si128(reinterpret_cast<__m128i*>(out + kQ6KPackedSc + 16 * p), Q3_KScales16(in, p));
    }
    for (int g = 0; g < 16; ++g) {
      __m256i q[4];
      Q3_KChunks(in, g, q);
      for (int j = 0; j < 4; ++j) Store256(out + kQ6KPackedQ + 32 * (4 * g + j), q[j]);
    }
  }
}

void ExpandQ6_K(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kQ6KStoredBytes;
    uint8_t* out = wide + s * kQ6KPackedBytes;
    for (size_t k = 0; k < kQ6KPackedQ; k += 32) Store256(out + k, Load256(in + k));
    for (int g = 0; g < 16; ++g) {
      __m256i q[4];
      Q6_KChunks(in + kQ6KStoredGroups + kQ6KStoredGroupBytes * g, q);
      for (int j = 0; j < 4; ++j) Store256(out + kQ6KPackedQ + 32 * (4 * g + j), q[j]);
    }
  }
}

// ---- the loop over groups and tokens, shared by every type ----

// Runs Kernel<n> for 1 <= n <= N: its RunStored (stored groups) when
// kStored, else its Run (wide groups).
template <template <int> class Kernel, bool kStored, int N = kTile>
void RunTile(int n, const PackedMatrix& w, const uint8_t* group, const GemmActivations& a,
             int64_t t0, float* out, int64_t out_stride) {
  if constexpr (N > 1) {
    if (n < N) return RunTile<Kernel, kStored, N - 1>(n, w, group, a, t0, out, out_stride);
  }
  if constexpr (kStored) {
    Kernel<N>::RunStored(w, group, a, t0, out, out_stride);
  } else {
    Kernel<N>::Run(w, group, a, t0, out, out_stride);
  }
}

template <template <int> class Kernel>
void Gemm(const PackedMatrix& w, int64_t row_begin, int64_t row_end, const GemmActivations& a,
          float* y, int64_t y_stride) {
  const int64_t g_begin = row_begin / kPackRows;
  const int64_t g_end = (row_end + kPackRows - 1) / kPackRows;
  alignas(32) float partial[kTile * kPackRows];
  // One register tile of tokens (decode) reads the stored groups and unpacks
  // them in registers; more tokens share one expansion per group instead.
  const bool stored = a.n_tokens <= kTile;
  WideGroups wide(w, stored ? nullptr : Avx2ExpandGroup);
  for (int64_t c0 = 0; c0 < a.n_tokens; c0 += kTokenChunk) {
    const int64_t c1 = std::min(a.n_tokens, c0 + kTokenChunk);
    for (int64_t g = g_begin; g < g_end; ++g) {
      const uint8_t* group = stored ? w.Group(g) : wide.Get(g, 0);
      const int64_t r0 = std::max(row_begin, g * kPackRows);
      const int64_t r1 = std::min(row_end, g * kPackRows + kPackRows);
      const bool whole = r1 - r0 == kPackRows;
      for (int64_t t = c0; t < c1; t += kTile) {
        const int n = static_cast<int>(std::min<int64_t>(kTile, c1 - t));
        float* out = whole ? y + t * y_stride + (r0 - row_begin) : partial;
        const int64_t out_stride = whole ? y_stride : kPackRows;
        if (stored) {
          RunTile<Kernel, true>(n, w, group, a, t, out, out_stride);
        } else {
          RunTile<Kernel, false>(n, w, group, a, t, out, out_stride);
        }
        if (whole) continue;
        for (int k = 0; k < n; ++k) {
          for (int64_t r = r0; r < r1; ++r) {
            y[(t + k) * y_stride + (r - row_begin)] = partial[k * kPackRows + (r - g * kPackRows)];
          }
        }
      }
    }
  }
}

// Run reads wide copies, RunStored the matrix's stored groups.
template <int T>
struct Q8_0Kernel {
  static constexpr auto Run = Tile32<0, T>;
  static constexpr auto RunStored = Tile32<0, T, true>;
};
template <int T>
struct Q5_0Kernel {
  static constexpr auto Run = Tile32<16, T>;
  static constexpr auto RunStored = Tile32<16, T, true>;
};
template <int T>
struct Q4_0Kernel {
  static constexpr auto Run = Tile32<8, T>;
  static constexpr auto RunStored = Tile32<8, T, true>;
};
template <int T>
struct Q5_1Kernel {
  static constexpr auto Run = Tile32<16, T, false, false, true>;
  static constexpr auto RunStored = Tile32<16, T, true, false, true>;
};
template <int T>
struct Q4_1Kernel {
  static constexpr auto Run = Tile32<8, T, false, false, true>;
  static constexpr auto RunStored = Tile32<8, T, true, false, true>;
};
template <int T>
struct Iq4NlKernel {
  static constexpr auto Run = Tile32<0, T>;
  static constexpr auto RunStored = Tile32<0, T, true, true>;
};
template <int T>
struct Iq4XsKernel {
  static constexpr auto Run = TileIq4Xs<T>;
  static constexpr auto RunStored = TileIq4Xs<T, true>;
};
template <int T>
struct Q4_KKernel {
  static constexpr auto Run = TileQ4_K<T>;
  static constexpr auto RunStored = TileQ4_K<T, true>;
};
template <int T>
struct Q5_KKernel {
  static constexpr auto Run = TileQ4_K<T, false, true>;
  static constexpr auto RunStored = TileQ4_K<T, true, true>;
};
template <int T>
struct Q2_KKernel {
  static constexpr auto Run = TileQ2_K<T>;
  static constexpr auto RunStored = TileQ2_K<T, true>;
};
template <int T>
struct Q3_KKernel {
  static constexpr auto Run = TileQ6_K<T, false, true>;
  static constexpr auto RunStored = TileQ6_K<T, true, true>;
};
template <int T>
struct Q6_KKernel {
  static constexpr auto Run = TileQ6_K<T>;
  static constexpr auto RunStored = TileQ6_K<T, true>;
};

}  // namespace

void Avx2ExpandGroup(quant::TensorType type, const uint8_t* stored, int64_t cols, uint8_t* wide) {
  switch (type) {
    case quant::TensorType::kQ6_K:
      return ExpandQ6_K(stored, cols, wide);
    case quant::TensorType::kQ3_K:
      return ExpandQ3_K(stored, cols, wide);
    case quant::TensorType::kQ2_K:
      return ExpandQ2_K(stored, cols, wide);
    case quant::TensorType::kQ5_0:
      return Expand32<true>(stored, cols, wide);
    case quant::TensorType::kQ5_1:
      return Expand32<true, false, true>(stored, cols, wide);
    case quant::TensorType::kQ4_1:
      return Expand32<false, false, true>(stored, cols, wide);
    case quant::TensorType::kIQ4_NL:
      return Expand32<false, true>(stored, cols, wide);
    case quant::TensorType::kIQ4_XS:
      return ExpandIq4Xs(stored, cols, wide);
    default:
      return Expand32<false>(stored, cols, wide);
  }
}

GemmPackedFn Avx2GemmPacked(quant::TensorType type) {
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
    case TT::kQ2_K:
      return Gemm<Q2_KKernel>;
    case TT::kQ3_K:
      return Gemm<Q3_KKernel>;
    case TT::kQ6_K:
      return Gemm<Q6_KKernel>;
    case TT::kIQ4_NL:
      return Gemm<Iq4NlKernel>;
    case TT::kIQ4_XS:
      return Gemm<Iq4XsKernel>;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

#else  // !defined(__x86_64__)

namespace ellm::kernels::internal {
GemmPackedFn Avx2GemmPacked(quant::TensorType) { return nullptr; }
void Avx2ExpandGroup(quant::TensorType type, const uint8_t* stored, int64_t cols, uint8_t* wide) {
  RefExpandGroup(type, stored, cols, wide);
}
}  // namespace ellm::kernels::internal

#endif  // defined(__x86_64__)

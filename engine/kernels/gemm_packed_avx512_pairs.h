// Internal to the AVX-512 VNNI and AMX packed GEMM files
// (gemm_packed_avx512.cc, gemm_packed_duo_avx512.cc, gemm_packed_amx.cc,
// gemm_packed_q3_k_avx512.cc, gemm_packed_q2_k_avx512.cc, gemm_packed_iq4_avx512.cc):
// unpacking the stored groups of the 32-element formats, Q4_K / Q5_K, Q6_K,
// Q3_K, Q2_K and IQ4_XS
// two groups at a time, and the pair buffer those copies fill for
// prefill (ExpandPair*; its layout is in gemm_packed_avx512_common.h). A
// pair-buffer chunk is also one row of an AMX B tile: 16 weight rows x 4
// consecutive quants. Include after gemm_packed_avx512_common.h, only where
// ELLM_AVX512_VNNI_KERNELS is defined; internal linkage, as that header's.
#pragma once

#include <cstddef>
#include <cstring>

#include "kernels/avx512_intrin.h"
#include "kernels/gemm_packed_avx512_common.h"
#include "kernels/gemm_packed_isa.h"
#include "kernels/isa_target.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)

namespace ellm::kernels::internal {
namespace {  // NOLINT(build/namespaces_headers): see above

// The fifth bits of chunk c (0-7) of both groups as 0x10 or 0 per byte,
// from the vector h whose byte i holds bit c of byte i of every chunk.
inline __m512i FifthBits(__m512i h, int c) {
  const __m128i n = _mm_cvtsi32_si128(c < 4 ? 4 - c : c - 4);
  const __m512i moved = c < 4 ? _mm512_sll_epi16(h, n) : _mm512_srl_epi16(h, n);
  return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
}
// Per-16-bit-lane shift counts: `lower` in the lower 256-bit half, `upper`
// in the upper one (for VPSLLVW / VPSRLVW on two chunks at once).
inline __m512i HalfCounts(int lower, int upper) {
  constexpr __mmask32 kUpper = 0xFFFF0000u;  // 16-bit lanes of the upper half
  return _mm512_mask_blend_epi16(kUpper, _mm512_set1_epi16(static_cast<short>(lower)),
                                 _mm512_set1_epi16(static_cast<short>(upper)));
}
// A Q6_K chunk's 6-bit quants: (nibbles & 0x0f) | (high & 0x30), the high
// bits already moved to bits 5:4 (VPTERNLOGD 0xEC is (A & C) | B).
inline __m512i JoinQ6(__m512i nibbles, __m512i high) {
  return _mm512_ternarylogic_epi32(nibbles, _mm512_and_si512(high, _mm512_set1_epi8(0x30)),
                                   _mm512_set1_epi8(0x0f), 0xEC);
}
// The 4 chunks (wide bytes, 6-bit q) of one 16-element group of the stored
// Q6_K layout, group 0's at p0 and group 1's at p1 (as the AVX2 Q6_KChunks).
inline void Q6_KChunks(const uint8_t* p0, const uint8_t* p1, __m512i q[4]) {
  const auto merge = JoinQ6;
  const __m512i v0 = Load2(p0, p1), v1 = Load2(p0 + 32, p1 + 32), h = Load2(p0 + 64, p1 + 64);
  q[0] = merge(v0, _mm512_slli_epi16(h, 4));
  q[1] = merge(_mm512_srli_epi16(v0, 4), _mm512_slli_epi16(h, 2));
  q[2] = merge(v1, h);
  q[3] = merge(_mm512_srli_epi16(v1, 4), _mm512_srli_epi16(h, 2));
}

// IQ4_NL's kOffset: its unsigned quant is the table's value + 128.
constexpr int kIq4NlOffset = 128;
// Bytes of a block's quants in a stored Q8_0 / Q5_0 / Q4_0 / IQ4_NL group.
constexpr size_t StoredBlock32Bytes(int offset) {
  return offset == 0    ? kPackedBlock32QuantBytes
         : offset == 16 ? kStoredBlockQ5_0
                        : kStoredBlockQ4_0;
}

// The 8 chunks of one block of two stored groups (q0, q1: the block's
// quants in each) as unsigned bytes: emit(vector, c) for each chunk c.
template <int kOffset, class Emit>
inline void StoredBlock32(const uint8_t* q0, const uint8_t* q1, Emit&& emit) {
  if constexpr (kOffset == 0) {  // Q8_0: the stored layout is the wide one
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int c = 0; c < 8; ++c) emit(_mm512_xor_si512(Load2(q0 + 32 * c, q1 + 32 * c), flip), c);
  } else {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i fifth = _mm512_setzero_si512();
    if constexpr (kOffset == 16) fifth = Load2(q0 + 128, q1 + 128);
    for (int k = 0; k < 4; ++k) {  // nibble vector k: chunks k (low) and k + 4 (high)
      const __m512i v = Load2(q0 + 32 * k, q1 + 32 * k);
      __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (kOffset == 16) {
        lo = _mm512_or_si512(lo, FifthBits(fifth, k));
        hi = _mm512_or_si512(hi, FifthBits(fifth, k + 4));
      }
      if constexpr (kOffset == kIq4NlOffset) {
        lo = Iq4Unsigned(lo);
        hi = Iq4Unsigned(hi);
      }
      emit(lo, k);
      emit(hi, k + 4);
    }
  }
}

template <int kOffset, bool kMin = false>
void ExpandPair32(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, uint8_t* qp) {
  const int64_t nb = w.cols / 32;
  const size_t q_base = PackedScaleBytes32(nb) * (kMin ? 2 : 1);
  for (int64_t b = 0; b < nb; ++b) {
    const size_t q = q_base + static_cast<size_t>(b) * StoredBlock32Bytes(kOffset);
    StoredBlock32<kOffset>(g0 + q, g1 + q,
                           [&](__m512i v, int c) { StorePairChunk(qp, 8 * b + c, v); });
  }
}

// Q4_K: 32-element group g of super-block s is pair g / 2's low (g even) or
// high nibbles: chunks 64 s + 8 g + c. After the quants of all super-blocks
// (64 * 64 bytes each), kQ4KPairScaleBytes per super-block: the 8 groups'
// scales as i32 lanes (row r of the pair in lane r, ready for VPMULLD),
// then the 8 groups' mins as i16 pairs (each doubled, for VPDPWSSD against
// a pair of bsums), so no tile of the chunk rebuilds them: each tile built
// them from the stored bytes with 6 shuffles per vector, ~10% of its
// micro-ops (ellm_bench_gemm Q4_K, 640 x 2048, 256 tokens, one thread,
// Emerald Rapids VM, best of 10, alternating builds: 146-161 -> 158-170
// GMAC/s). A half-dot trick (VPDPWSSD for VPMULLD + VPADDD) measured slower.
constexpr size_t kQ4KPairQuantBytes = 64 * 64;
constexpr size_t kQ4KPairScaleBytes = 16 * 64;
inline size_t Q4_KPairScales(int64_t nsb, int64_t s) {
  return static_cast<size_t>(nsb) * kQ4KPairQuantBytes +
         static_cast<size_t>(s) * kQ4KPairScaleBytes;
}
// Group g's scales of super-block sb0 / sb1 (the pair's rows) as i32 lanes,
// and its mins as doubled i16 pairs: the pair buffer's ready vectors, and
// what the in-register path (TileQ4_K kStored) builds in their place.
inline __m512i Q4_KScaleVector(const uint8_t* sb0, const uint8_t* sb1, int g) {
  const size_t off = kQ4KPackedSc + 8 * g;
  return _mm512_and_si512(Dup8x2(sb0 + off, sb1 + off), _mm512_set1_epi32(0xffff));
}
inline __m512i Q4_KMinVector(const uint8_t* sb0, const uint8_t* sb1, int g) {
  const size_t off = kQ4KPackedM + 8 * g;
  return Dup8x2(sb0 + off, sb1 + off);
}
// Q5_K (kFive) fills the same buffer with its 5-bit quants.
template <bool kFive>
void ExpandPairK4(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, uint8_t* qp) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const int64_t nsb = w.cols / kQkK;
  constexpr size_t kSbBytes = kFive ? kQ5KPackedBytes : kQ4KPackedBytes;
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb0 = g0 + s * kSbBytes;
    const uint8_t* sb1 = g1 + s * kSbBytes;
    for (int p = 0; p < 4; ++p) {
      [[maybe_unused]] __m512i h_lo, h_hi;  // fifth bits of groups 2p and 2p + 1
      if constexpr (kFive) {
        h_lo = Load2(sb0 + kQ5KPackedH + 64 * p, sb1 + kQ5KPackedH + 64 * p);
        h_hi = Load2(sb0 + kQ5KPackedH + 64 * p + 32, sb1 + kQ5KPackedH + 64 * p + 32);
      }
      for (int c = 0; c < 8; ++c) {
        const size_t off = kQ4KPackedQ + 256 * p + 32 * c;
        const __m512i v = Load2(sb0 + off, sb1 + off);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if constexpr (kFive) {
          lo = _mm512_or_si512(lo, FifthBits(h_lo, c));
          hi = _mm512_or_si512(hi, FifthBits(h_hi, c));
        }
        StorePairChunk(qp, 64 * s + 16 * p + c, lo);
        StorePairChunk(qp, 64 * s + 16 * p + 8 + c, hi);
      }
    }
    uint8_t* sc = qp + Q4_KPairScales(nsb, s);
    for (int g = 0; g < 8; ++g) {
      StorePairChunk(sc, g, Q4_KScaleVector(sb0, sb1, g));
      StorePairChunk(sc, 8 + g, Q4_KMinVector(sb0, sb1, g));
    }
  }
}

// Q6_K: 16-element group g of super-block s: chunks 64 s + 4 g + c.
inline void ExpandPairQ6_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1,
                           uint8_t* qp) {
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    for (int g = 0; g < 16; ++g) {
      const size_t off = s * kQ6KStoredBytes + kQ6KStoredGroups + kQ6KStoredGroupBytes * g;
      __m512i q[4];
      Q6_KChunks(g0 + off, g1 + off, q);
      for (int c = 0; c < 4; ++c) StorePairChunk(qp, 64 * s + 4 * g + c, q[c]);
    }
  }
}

// ---- Q3_K and Q2_K (gemm_packed_q3_k_avx512.cc, gemm_packed_q2_k_avx512.cc,
// and their few-token kernels in gemm_packed_duo_avx512.cc) ----

// The scales sc - 32 of pair p of 16-element groups of one stored
// super-block (byte 2r + k: row r, group 2p + k), as gemm_packed_avx2.cc's
// Q3_KScales16.
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

// Bits at `from` moved to bit `to` in every byte (a 16-bit shift; the
// caller masks).
inline __m512i MoveBits(__m512i v, int from, int to) {
  const __m128i n = _mm_cvtsi32_si128(from > to ? from - to : to - from);
  return from > to ? _mm512_srl_epi16(v, n) : _mm512_sll_epi16(v, n);
}

// The 4 chunks (u in [0, 7]) of 16-element group g of the stored
// super-blocks sb0 (lanes 0-7) and sb1 (lanes 8-15).
inline void Q3_KChunks(const uint8_t* sb0, const uint8_t* sb1, int g, __m512i q[4]) {
  const size_t lo = kQ3KStoredLow + 32 * g, hi = kQ3KStoredHigh + 32 * (g / 2);
  const __m512i low = Load2(sb0 + lo, sb1 + lo), high = Load2(sb0 + hi, sb1 + hi);
  for (int j = 0; j < 4; ++j) {
    q[j] =
        _mm512_or_si512(_mm512_and_si512(MoveBits(low, 2 * j, 0), _mm512_set1_epi8(3)),
                        _mm512_and_si512(MoveBits(high, 4 * (g % 2) + j, 2), _mm512_set1_epi8(4)));
  }
}

// The 4 chunks (q in [0, 3]) of 16-element group g of the stored
// super-blocks sb0 (lanes 0-7) and sb1 (lanes 8-15).
inline void Q2_KChunks(const uint8_t* sb0, const uint8_t* sb1, int g, __m512i q[4]) {
  const size_t off = kQ2KPackedQ + 32 * g;
  const __m512i low = Load2(sb0 + off, sb1 + off);
  for (int j = 0; j < 4; ++j) {
    q[j] = _mm512_and_si512(_mm512_srl_epi16(low, _mm_cvtsi32_si128(2 * j)), _mm512_set1_epi8(3));
  }
}

// ---- IQ4_XS (gemm_packed_iq4_avx512.cc, and its few-token kernel) ----

// Chunks c and c + 4 (c < 4) of a stored group's 32-element group, for both
// groups of the pair (q0, q1: that group's 4 nibble vectors in each).
inline void StoredChunks(const uint8_t* q0, const uint8_t* q1, int c, __m512i* lo, __m512i* hi) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i v = Load2(q0 + 32 * c, q1 + 32 * c);
  *lo = Iq4Unsigned(_mm512_and_si512(v, m4));
  *hi = Iq4Unsigned(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
}

// Row r's ls - 32 of group g (8 i8 per group of the pair) as an i16 pair in
// i32 lane r (group 1's rows in lanes 8-15), each value twice.
inline __m512i ScalePairs(const uint8_t* sb0, const uint8_t* sb1, int g) {
  const size_t off = kIq4XsPackedSc + 8 * g;
  const __m128i x =
      _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb0 + off)),
                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb1 + off)));
  const __m256i dup = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(x, x)),
                                              _mm_unpackhi_epi8(x, x), 1);
  return _mm512_cvtepi8_epi16(dup);
}

}  // namespace
}  // namespace ellm::kernels::internal

ELLM_ISA_END

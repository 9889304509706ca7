// AVX-512 VNNI packed GEMM for Q3_K (gemm_packed.h has its layout), on the
// driver of gemm_packed_avx512_common.h: two groups (16 rows) x kTile
// tokens per register tile, one VPDPBUSD per chunk and token, as Q6_K's
// kernels in gemm_packed_avx512.cc with the quants u = q + 4 in [0, 7].
//
// A 16-element group's dot is at most 16 * 7 * 127 = 14224, times its
// signed 6-bit scale (sc - 32) in VPMULLD; -4 * sc * (sum of the group's
// activations) comes off through the bsums (VPDPWSSD on i16 pairs). A
// super-block's sum stays below 16 * 32 * 16 * 7 * 127 < 2^23. Integer sums
// are exact; the float work per super-block is DotQ3_K's, (d * y.d) * isum,
// in each lane (built with -ffp-contract=off): results equal RefVecDot bit
// for bit.
#include "kernels/gemm_packed_isa.h"

#include "kernels/avx512_intrin.h"
#include "kernels/isa_target.h"

#if defined(ELLM_AVX512_VNNI_KERNELS)

#include <cstring>

#include "kernels/gemm_packed_avx512_common.h"
#include "kernels/gemm_packed_avx512_pairs.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)

namespace ellm::kernels::internal {
namespace {

// The pair buffer: 16-element group g of super-block s is chunks 64 s + 4 g
// + c (c < 4), as Q6_K's.
void ExpandPairQ3_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, uint8_t* qp) {
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    for (int g = 0; g < 16; ++g) {
      __m512i q[4];
      Q3_KChunks(g0 + s * kQ3KStoredBytes, g1 + s * kQ3KStoredBytes, g, q);
      for (int c = 0; c < 4; ++c) StorePairChunk(qp, 64 * s + 4 * g + c, q[c]);
    }
  }
}

// g0 and g1 are the matrix's own stored groups (g1 == g0 for a lone last
// group). kStored: their quants are unpacked in registers
// (PrefetchNextPair), else read from the pair buffer qp; the scales are
// always unpacked from the stored groups.
template <int T, bool kStored = false>
void TileQ3_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
              const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next_pair(w, 2, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) PrefetchNextPair(next_pair, g0, g1, s);
    const uint8_t* sb0 = g0 + s * kQ3KStoredBytes;
    const uint8_t* sb1 = g1 + s * kQ3KStoredBytes;
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      // i16 lanes 2r, 2r + 1: row r's scales of groups 2p, 2p + 1.
      const __m512i pair = _mm512_cvtepi8_epi16(_mm256_inserti128_si256(
          _mm256_castsi128_si256(Q3_KScales16(sb0, p)), Q3_KScales16(sb1, p), 1));
      // The stored u is q + 4: subtract 4 * sum_g sc_g * bsums_g, per pair.
      const __m512i neg4 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 2));
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm512_dpwssd_epi32(isum[t], neg4, Bcast4(act[t][s].bsums + 2 * p));
      }
      for (int k = 0; k < 2; ++k) {
        // Row r's scale of group 2p + k, sign-extended to its i32 lane.
        const __m512i sc = k == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                  : _mm512_srai_epi32(pair, 16);
        const int g = 2 * p + k;
        __m512i wq[4];
        if constexpr (kStored) {
          Q3_KChunks(sb0, sb1, g, wq);
        } else {
          for (int c = 0; c < 4; ++c) wq[c] = PairChunk(qp, 64 * s + 4 * g + c);
        }
        __m512i dot[T];
        for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
          for (int t = 0; t < T; ++t) {
            dot[t] = DpbusdBcast(dot[t], wq[c], act[t][s].qs + 16 * g + 4 * c);
          }
        }
        for (int t = 0; t < T; ++t)
          isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], sc));
      }
    }
    const __m512 d = Halves16(sb0, sb1);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[t][s].d)),
                                                   _mm512_cvtepi32_ps(isum[t])));
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// TileQ3_K for one token and one stored group (decode), read once in
// memory order: a 16-element group's four chunks as two vectors (chunks 0,
// 1 and 2, 3), each half unpacked from the same 2-bit lows and third bits
// (broadcast to both halves) with its own shift counts, against the
// activation table's chunk pairs; the group's 8 rows' scales in both
// halves, the halves' sums added at the end of each super-block. Integer
// sums are exact and the float work per super-block is the pair kernel's,
// so every row gets the bits it gets there.
void TileQ3_KOne(const PackedMatrix& w, const uint8_t* g, const GemmActivations& a, int64_t t0,
                 const uint8_t* table, float* out) {
  const BlockQ8_K* act = reinterpret_cast<const BlockQ8_K*>(a.rows + t0 * a.stride);
  // Chunk j's 2-bit lows are bits 2j, 2j + 1 (down to 0, 1); its third bit
  // is bit 4 * (g % 2) + j of the group pair's vector (to bit 2): even
  // groups up 2, 1 (chunks 0, 1) and down 0, 1 (2, 3); odd ones down 2, 3
  // and 4, 5. As MoveBits in Q3_KChunks, per half.
  const __m512i low01 = HalfCounts(0, 2), low23 = HalfCounts(4, 6);
  const __m512i even01 = HalfCounts(2, 1), even23 = HalfCounts(0, 1);
  const __m512i odd01 = HalfCounts(2, 3), odd23 = HalfCounts(4, 5);
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  const auto quants = [&](__m512i low, __m512i low_shift, __m512i high_moved) {
    return _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(low, low_shift), three),
                           _mm512_and_si512(high_moved, four));
  };
  const int64_t nsb = w.cols / kQkK;
  const GroupPrefetch next(w, 2, nsb);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kQ3KStoredBytes;
    __m512i isum = _mm512_setzero_si512();
    __m256i bias = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      const __m128i sc16 = Q3_KScales16(sb, p);
      const __m512i pair =
          _mm512_cvtepi8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(sc16), sc16, 1));
      // The stored u is q + 4: subtract 4 * sum_g sc_g * bsums_g (8 lanes).
      const __m512i neg4 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 2));
      int32_t bsums;
      std::memcpy(&bsums, act[s].bsums + 2 * p, 4);
      bias = _mm256_dpwssd_epi32(bias, _mm512_castsi512_si256(neg4), _mm256_set1_epi32(bsums));
      const __m512i high = Both32(sb + kQ3KStoredHigh + 32 * p);
      for (int k = 0; k < 2; ++k) {
        const __m512i sc = k == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                  : _mm512_srai_epi32(pair, 16);
        const int gi = 2 * p + k;
        const __m512i low = Both32(sb + kQ3KStoredLow + 32 * gi);
        const __m512i q01 = quants(
            low, low01, k == 0 ? _mm512_sllv_epi16(high, even01) : _mm512_srlv_epi16(high, odd01));
        const __m512i q23 = quants(
            low, low23, k == 0 ? _mm512_srlv_epi16(high, even23) : _mm512_srlv_epi16(high, odd23));
        __m512i dot =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), q01, PairChunk(table, 32 * s + 2 * gi));
        dot = _mm512_dpbusd_epi32(dot, q23, PairChunk(table, 32 * s + 2 * gi + 1));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, sc));
      }
    }
    const __m256i sums = _mm256_add_epi32(
        _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1)), bias);
    const __m256 d = _mm256_cvtph_ps(Load128(sb));
    acc = _mm256_add_ps(
        acc, _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[s].d)), _mm256_cvtepi32_ps(sums)));
  }
  _mm256_storeu_ps(out, acc);
}

template <int T>
struct Q3_KKernel : ActQ8_K {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ3_K;
  static constexpr auto ExpandPair = ExpandPairQ3_K;
  static constexpr auto Run = TileQ3_K<T>;
  static constexpr auto RunStored = TileQ3_K<T, true>;
  static constexpr auto RunOne = TileQ3_KOne;
};

}  // namespace

GemmPackedFn Avx512VnniGemmPackedQ3_K() { return Gemm<Q3_KKernel>; }

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512 VNNI

namespace ellm::kernels::internal {
GemmPackedFn Avx512VnniGemmPackedQ3_K() { return nullptr; }
}  // namespace ellm::kernels::internal

#endif

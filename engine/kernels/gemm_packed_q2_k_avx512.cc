// AVX-512 VNNI packed GEMM for Q2_K (gemm_packed.h has its layout), on the
// driver of gemm_packed_avx512_common.h: two groups (16 rows) x kTile
// tokens per register tile, one VPDPBUSD per chunk and token.
//
// A 16-element group's dot is at most 16 * 3 * 127 = 6096, times its 4-bit
// scale in VPMULLD; the mins' sum m * bsum builds up by VPDPWSSD on i16
// pairs (|m * bsum| <= 15 * 2032). Super-block sums stay below 2^21.
// Integer sums are exact; the float work per super-block is DotQ2_K's,
// (y.d * d) * isum - (y.d * dmin) * summs, in each lane (built with
// -ffp-contract=off): results equal RefVecDot bit for bit.
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
void ExpandPairQ2_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, uint8_t* qp) {
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    for (int g = 0; g < 16; ++g) {
      __m512i q[4];
      Q2_KChunks(g0 + s * kQ2KStoredBytes, g1 + s * kQ2KStoredBytes, g, q);
      for (int c = 0; c < 4; ++c) StorePairChunk(qp, 64 * s + 4 * g + c, q[c]);
    }
  }
}

// g0 and g1 are the matrix's own stored groups (g1 == g0 for a lone last
// group). kStored: their quants are unpacked in registers
// (PrefetchNextPair), else read from the pair buffer qp; the scale bytes
// are read from the stored groups.
template <int T, bool kStored = false>
void TileQ2_K(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
              const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next_pair(w, 2, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) PrefetchNextPair(next_pair, g0, g1, s);
    const uint8_t* sb0 = g0 + s * kQ2KStoredBytes;
    const uint8_t* sb1 = g1 + s * kQ2KStoredBytes;
    __m512i isum[T], msum[T];
    for (int t = 0; t < T; ++t) isum[t] = msum[t] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      // i16 lanes 2r, 2r + 1: row r's scales (mins) of groups 2p, 2p + 1.
      const size_t off = kQ2KPackedSc + 16 * p;
      const __m256i raw = Load2x16(sb0 + off, sb1 + off);
      const __m512i pair = _mm512_cvtepu8_epi16(_mm256_and_si256(raw, m4));
      const __m512i mins = _mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
      for (int t = 0; t < T; ++t) {
        msum[t] = _mm512_dpwssd_epi32(msum[t], mins, Bcast4(act[t][s].bsums + 2 * p));
      }
      for (int k = 0; k < 2; ++k) {
        // Row r's scale of group 2p + k in its i32 lane.
        const __m512i sc = k == 0 ? _mm512_and_si512(pair, _mm512_set1_epi32(0xffff))
                                  : _mm512_srli_epi32(pair, 16);
        const int g = 2 * p + k;
        __m512i wq[4];
        if constexpr (kStored) {
          Q2_KChunks(sb0, sb1, g, wq);
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
    const __m512 d = Halves16(sb0 + kQ2KPackedD, sb1 + kQ2KPackedD);
    const __m512 dmin = Halves16(sb0 + kQ2KPackedDmin, sb1 + kQ2KPackedDmin);
    for (int t = 0; t < T; ++t) {
      const __m512 da = _mm512_set1_ps(act[t][s].d);
      const __m512 x =
          _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum[t])),
                        _mm512_mul_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(msum[t])));
      acc[t] = _mm512_add_ps(acc[t], x);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// TileQ2_K for one token and one stored group (decode), read once in
// memory order: a 16-element group's four chunks as two vectors (chunks 0,
// 1 and 2, 3), each half shifted from the same 2-bit vector (broadcast to
// both halves) by its own count, against the activation table's chunk
// pairs; the group's 8 rows' scales in both halves, the halves' sums added
// at the end of each super-block. Integer sums are exact and the float
// work per super-block is the pair kernel's: every row gets its bits.
void TileQ2_KOne(const PackedMatrix& w, const uint8_t* g, const GemmActivations& a, int64_t t0,
                 const uint8_t* table, float* out) {
  const BlockQ8_K* act = reinterpret_cast<const BlockQ8_K*>(a.rows + t0 * a.stride);
  const __m512i shift01 = HalfCounts(0, 2), shift23 = HalfCounts(4, 6);
  const __m512i three = _mm512_set1_epi8(3);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const int64_t nsb = w.cols / kQkK;
  const GroupPrefetch next(w, 2, nsb);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    next(g, s);
    const uint8_t* sb = g + s * kQ2KStoredBytes;
    __m512i isum = _mm512_setzero_si512();
    __m256i msum = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {  // pairs of 16-element groups
      const uint8_t* sc_p = sb + kQ2KPackedSc + 16 * p;
      const __m256i raw = Load2x16(sc_p, sc_p);
      const __m512i pair = _mm512_cvtepu8_epi16(_mm256_and_si256(raw, m4));
      const __m512i mins = _mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
      int32_t bsums;
      std::memcpy(&bsums, act[s].bsums + 2 * p, 4);
      msum = _mm256_dpwssd_epi32(msum, _mm512_castsi512_si256(mins), _mm256_set1_epi32(bsums));
      for (int k = 0; k < 2; ++k) {
        const __m512i sc = k == 0 ? _mm512_and_si512(pair, _mm512_set1_epi32(0xffff))
                                  : _mm512_srli_epi32(pair, 16);
        const int gi = 2 * p + k;
        const __m512i q = Both32(sb + kQ2KPackedQ + 32 * gi);
        const __m512i q01 = _mm512_and_si512(_mm512_srlv_epi16(q, shift01), three);
        const __m512i q23 = _mm512_and_si512(_mm512_srlv_epi16(q, shift23), three);
        __m512i dot =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), q01, PairChunk(table, 32 * s + 2 * gi));
        dot = _mm512_dpbusd_epi32(dot, q23, PairChunk(table, 32 * s + 2 * gi + 1));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, sc));
      }
    }
    const __m256i sums =
        _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
    const __m256 d = _mm256_cvtph_ps(Load128(sb + kQ2KPackedD));
    const __m256 dmin = _mm256_cvtph_ps(Load128(sb + kQ2KPackedDmin));
    const __m256 da = _mm256_set1_ps(act[s].d);
    const __m256 x =
        _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(sums)),
                      _mm256_mul_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(msum)));
    acc = _mm256_add_ps(acc, x);
  }
  _mm256_storeu_ps(out, acc);
}

template <int T>
struct Q2_KKernel : ActQ8_K {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kQ2_K;
  static constexpr auto ExpandPair = ExpandPairQ2_K;
  static constexpr auto Run = TileQ2_K<T>;
  static constexpr auto RunStored = TileQ2_K<T, true>;
  static constexpr auto RunOne = TileQ2_KOne;
};

}  // namespace

GemmPackedFn Avx512VnniGemmPackedQ2_K() { return Gemm<Q2_KKernel>; }

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512 VNNI

namespace ellm::kernels::internal {
GemmPackedFn Avx512VnniGemmPackedQ2_K() { return nullptr; }
}  // namespace ellm::kernels::internal

#endif

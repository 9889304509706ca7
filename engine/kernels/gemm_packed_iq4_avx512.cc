// AVX-512 VNNI packed GEMM for IQ4_XS (gemm_packed.h has its layout), on
// the driver of gemm_packed_avx512_common.h: two groups (16 rows) x kTile
// tokens per register tile, one VPDPBUSD per chunk and token.
//
// Weights: the 4-bit indices looked up (VPSHUFB) in the table's values plus
// 128 (u = v + 128 in [1, 241], unsigned for VPDPBUSD). A 32-element group's
// dot is then sum v * a + 128 * sum a, at most 32 * 241 * 127 < 2^20 in i32;
// times the row's ls - 32 (VPMULLD), and -128 * (ls - 32) * sum a comes off
// through the activations' bsums (VPDPWSSD on i16 pairs, |128 * 32| < 2^15).
// Super-block sums stay below 8 * 32 * 32 * 127 * 241 < 2^31. Integer sums
// are exact; the float work per super-block is DotIq4Xs's, (d * y.d) *
// isum, in each lane (built with -ffp-contract=off): results equal
// RefVecDot bit for bit.
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

// The pair buffer: 32-element group g of super-block s is chunks
// 64 s + 8 g + c (c < 8), as unsigned quants.
void ExpandPairIq4Xs(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, uint8_t* qp) {
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    for (int g = 0; g < 8; ++g) {
      const size_t off = s * kIq4XsStoredBytes + kIq4XsPackedQ + kIq4XsStoredGroupBytes * g;
      for (int c = 0; c < 4; ++c) {
        __m512i lo, hi;
        StoredChunks(g0 + off, g1 + off, c, &lo, &hi);
        StorePairChunk(qp, 64 * s + 8 * g + c, lo);
        StorePairChunk(qp, 64 * s + 8 * g + c + 4, hi);
      }
    }
  }
}

// g0 and g1 are the matrix's own stored groups (g1 == g0 for a lone last
// group). kStored: their quants are unpacked in registers
// (PrefetchNextPair), else read from the pair buffer qp.
template <int T, bool kStored = false>
void TileIq4Xs(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
               const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const BlockQ8_K* act[T];
  for (int t = 0; t < T; ++t)
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  [[maybe_unused]] const GroupPrefetch next_pair(w, 2, w.cols / kQkK);
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    if constexpr (kStored) PrefetchNextPair(next_pair, g0, g1, s);
    const uint8_t* sb0 = g0 + s * kIq4XsStoredBytes;
    const uint8_t* sb1 = g1 + s * kIq4XsStoredBytes;
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    for (int g = 0; g < 8; ++g) {
      __m512i dot[T];
      for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
      const auto chunk = [&](__m512i wq, int c) {
        for (int t = 0; t < T; ++t) {
          dot[t] = DpbusdBcast(dot[t], wq, act[t][s].qs + 32 * g + 4 * c);
        }
      };
      if constexpr (kStored) {
        const size_t off = kIq4XsPackedQ + kIq4XsStoredGroupBytes * g;
        for (int c = 0; c < 4; ++c) {
          __m512i lo, hi;
          StoredChunks(sb0 + off, sb1 + off, c, &lo, &hi);
          chunk(lo, c);
          chunk(hi, c + 4);
        }
      } else {
        for (int c = 0; c < 8; ++c) chunk(PairChunk(qp, 64 * s + 8 * g + c), c);
      }
      const __m512i pairs = ScalePairs(sb0, sb1, g);
      const __m512i sc = _mm512_srai_epi32(pairs, 16);  // ls - 32 in each row's i32 lane
      const __m512i neg128 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pairs, 7));
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], sc));
        isum[t] = _mm512_dpwssd_epi32(isum[t], neg128, Bcast4(act[t][s].bsums + 2 * g));
      }
    }
    const __m512 d = Halves16(sb0 + kIq4XsPackedD, sb1 + kIq4XsPackedD);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[t][s].d)),
                                                   _mm512_cvtepi32_ps(isum[t])));
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// One token, one group (decode): the pair kernel on the pair (g, g), its
// upper half dropped. It does twice the integer work, which decode, bound by
// reading the weights, mostly hides; a two-chunks-per-ZMM kernel against the
// activation table (as Q2_K's and Q3_K's) measured slower here: Llama 8B's
// 4096 x 14336 IQ4_XS matrix, one thread, Zen 5 VM, 1.26-1.41 ms against
// 0.99-1.05 (why is not established: it reads four 64-byte table chunks
// per group where the pair broadcasts eight activation dwords).
void TileIq4XsOne(const PackedMatrix& w, const uint8_t* g, const GemmActivations& a, int64_t t0,
                  const uint8_t* /*table*/, float* out) {
  alignas(64) float pair[kPairRows];
  TileIq4Xs<1, true>(w, g, g, nullptr, a, t0, pair, kPairRows);
  std::memcpy(out, pair, kPackRows * sizeof(float));
}

template <int T>
struct Iq4XsKernel : ActQ8_K {
  static constexpr quant::TensorType kDuoType = quant::TensorType::kIQ4_XS;
  static constexpr auto ExpandPair = ExpandPairIq4Xs;
  static constexpr auto Run = TileIq4Xs<T>;
  static constexpr auto RunStored = TileIq4Xs<T, true>;
  static constexpr auto RunOne = TileIq4XsOne;
};

}  // namespace

GemmPackedFn Avx512VnniGemmPackedIq4Xs() { return Gemm<Iq4XsKernel>; }

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AVX-512 VNNI

namespace ellm::kernels::internal {
GemmPackedFn Avx512VnniGemmPackedIq4Xs() { return nullptr; }
}  // namespace ellm::kernels::internal

#endif

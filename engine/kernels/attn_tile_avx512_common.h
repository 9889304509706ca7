// Internal to the AVX-512 attention tile files (attn_tile_avx512.cc,
// attn_tile_avx512_bf16.cc): how K and V rows are read, the score block's
// shape, and the Hsum4 trees and stores that end every block of scores
// (ScoreBlock's and the bf16 pair kernels' alike). Include it only where
// ELLM_AVX512_KERNELS is defined (after avx512_intrin.h). Its contents have
// internal linkage: the SIMDe-emulated build of the same files
// (tests/CMakeLists.txt) must not share a definition with the real one.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/avx512_intrin.h"
#include "kernels/isa_target.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512)

namespace ellm::kernels::internal {
namespace {  // NOLINT(build/namespaces_headers): see above

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

// Query rows per chunk, as in the AVX2 file: the chunk and the key rows of a
// block stay in L1 while the key tile streams from L2 once per chunk.
constexpr int kScoreRowChunk = 16;
constexpr int kScoreKeys = 4;  // keys per register block

// _mm256_hadd_ps on each 256-bit half: per 128-bit lane [x0 + x1, x2 + x3,
// y0 + y1, y2 + y3] (two shuffles and one add, as vhaddps itself).
inline __m512 Hadd(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Hsum4 of a pair's four accumulators, both halves at once: 128-bit lanes
// [row a's lanes 0-3 summed, its lanes 4-7, row b's 0-3, row b's 4-7], each
// holding the four keys. Hsum4 ends with lane 0 + lane 1 of each half.
inline __m512 PairTree(const __m512* acc) {
  return Hadd(Hadd(acc[0], acc[1]), Hadd(acc[2], acc[3]));
}

// The last step of Hsum4 for two pairs' trees: [row a, row b, row c, row d]
// (pair x's rows a, b; pair y's c, d), each lane four keys' scores.
inline __m512 FinishTrees(__m512 x, __m512 y) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Writes lanes [0, nk) of each 128-bit lane r < rows to s + r * ss.
inline void StoreLanes(__m512 v, int rows, float* s, int64_t ss, __mmask8 m) {
  _mm_mask_storeu_ps(s, m, _mm512_castps512_ps128(v));
  if (rows > 1) _mm_mask_storeu_ps(s + ss, m, _mm512_extractf32x4_ps(v, 1));
  if (rows > 2) _mm_mask_storeu_ps(s + 2 * ss, m, _mm512_extractf32x4_ps(v, 2));
  if (rows > 3) _mm_mask_storeu_ps(s + 3 * ss, m, _mm512_extractf32x4_ps(v, 3));
}

// The end of a block of P row pairs x 4 keys: the pairs' Hsum4 trees, and
// the scores of the real rows and keys stored, each plus tail(r, c) when
// the dimension has a tail (the products past the vector loop).
template <int P, class Tail>
inline void StoreBlockScores(const __m512 (&acc)[P][kScoreKeys], int rows, int nk, bool has_tail,
                             float* s, int64_t ss, Tail tail) {
  __m512 t[P];
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i) t[i] = PairTree(acc[i]);
  const __mmask8 m = static_cast<__mmask8>((1u << nk) - 1);
#pragma GCC unroll 2
  for (int i = 0; i < P; i += 2) {
    const int r0 = 2 * i;
    if (r0 >= rows) break;
    const __m512 h = FinishTrees(t[i], t[i + 1 < P ? i + 1 : i]);
    const int n = std::min(4, rows - r0);
    if (!has_tail) {
      StoreLanes(h, n, s + r0 * ss, ss, m);
      continue;
    }
    alignas(64) float out[16];
    _mm512_store_ps(out, h);
    for (int r = 0; r < n; ++r) {
      for (int c = 0; c < nk; ++c) s[(r0 + r) * ss + c] = out[4 * r + c] + tail(r0 + r, c);
    }
  }
}

// The same for whole blocks (all 2P rows and 4 keys real, no tail).
template <int P>
inline void StoreFullScores(const __m512 (&acc)[P][kScoreKeys], float* s, int64_t ss) {
#pragma GCC unroll 2
  for (int i = 0; i < P; i += 2) {
    const __m512 h = FinishTrees(PairTree(acc[i]), PairTree(acc[i + 1]));
    float* out = s + 2 * i * ss;
    _mm_storeu_ps(out, _mm512_castps512_ps128(h));
    _mm_storeu_ps(out + ss, _mm512_extractf32x4_ps(h, 1));
    _mm_storeu_ps(out + 2 * ss, _mm512_extractf32x4_ps(h, 2));
    _mm_storeu_ps(out + 3 * ss, _mm512_extractf32x4_ps(h, 3));
  }
}

}  // namespace
}  // namespace ellm::kernels::internal

ELLM_ISA_END

// Internal to the AVX-512 VNNI packed GEMM files (gemm_packed_avx512.cc,
// gemm_packed_*_avx512.cc): the register-tile constants, loads, the pair
// buffer's chunks, the one-token activation table and the loop over group
// pairs and tokens that every type's kernels plug into. Include it only
// where ELLM_AVX512_VNNI_KERNELS is defined (after avx512_intrin.h). Its
// contents have internal linkage: the SIMDe-emulated build of the same
// files (tests/CMakeLists.txt) must not share a definition with the real one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/avx512_intrin.h"
#include "kernels/gemm_packed_isa.h"
#include "kernels/isa_target.h"
#include "quant/iq4_nl.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)

namespace ellm::kernels::internal {
namespace {  // NOLINT(build/namespaces_headers): see above

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQkK;

// Rows per register tile: two packed groups.
constexpr int kPairRows = 2 * kPackRows;
// Tokens per register tile. 32 ZMM registers hold the per-token i32 sums and
// f32 accumulators of 8 tokens (Q4_K: also the per-group dots) beside the
// weight chunk; ellm_bench_gemm at 256 tokens, one thread: Q5_0 283 -> 304-330
// GMAC/s and Q4_K 271-283 -> 332-336 going from 4 tokens to 8.
constexpr int kTile = 8;
// Tokens per cache tile, as in the AVX2 file.
constexpr int64_t kTokenChunk = 64;

inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
// 32 aligned bytes of group 0 in the low half, the same 32 of group 1 high.
inline __m512i Load2(const uint8_t* p0, const uint8_t* p1) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(p0))),
      _mm256_load_si256(reinterpret_cast<const __m256i*>(p1)), 1);
}
// The same 32 aligned bytes in both halves (one VBROADCASTI64X4).
inline __m512i Both32(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}
// 16 bytes of group 0 then 16 of group 1.
inline __m256i Load2x16(const uint8_t* p0, const uint8_t* p1) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(Load128(p0)), Load128(p1), 1);
}
// 8 u8 (one per row) of each group as 32 i16, each value twice.
inline __m512i Dup8x2(const uint8_t* p0, const uint8_t* p1) {
  const __m128i x = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p0)),
                                       _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p1)));
  const __m256i dup = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(x, x)),
                                              _mm_unpackhi_epi8(x, x), 1);
  return _mm512_cvtepu8_epi16(dup);
}
// 8 f16 of each group, widened (exact).
inline __m512 Halves16(const uint8_t* p0, const uint8_t* p1) {
  return _mm512_cvtph_ps(Load2x16(p0, p1));
}
// Four activation bytes broadcast to all sixteen 32-bit lanes.
inline __m512i Bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// The next pair is two groups on (GroupPrefetch with ahead = 2).
inline void PrefetchNextPair(const GroupPrefetch& next_pair, const uint8_t* g0, const uint8_t* g1,
                             int64_t i) {
  next_pair(g0, i);
  if (g1 != g0) next_pair(g1, i);
}

// The unsigned quants (value + 128, in [1, 241]) of 4-bit IQ4_NL / IQ4_XS
// indices, by VPSHUFB.
inline __m512i Iq4Unsigned(__m512i idx) {
  const __m512i table =
      _mm512_xor_si512(_mm512_broadcast_i32x4(
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4NlValues))),
                       _mm512_set1_epi8(static_cast<char>(0x80)));
  return _mm512_shuffle_epi8(table, idx);
}

// ---- prefill: a pair's quants, ready for VPDPBUSD ----
//
// With more tokens than one register tile (prefill), each pair of groups is
// first copied, once per token chunk, into a buffer of this thread's where
// 4-element chunk k of the rows (in element order) is 64 aligned bytes:
// group g's 8 rows x 4 quants, then group g + 1's, as unsigned bytes (Q8_0's
// sign bits flipped, nibbles and high bits joined). Every register tile of
// the chunk then reads one aligned vector per chunk instead of joining two
// halves and unpacking them again: the copy's work is shared by up to 8
// tiles. Only the quants move, and for Q4_K its scales and mins as ready
// vectors (ExpandPairQ4_K); other scales are read from the stored groups.

// Chunk k of a pair buffer.
inline __m512i PairChunk(const uint8_t* qp, int64_t k) {
  return _mm512_load_si512(reinterpret_cast<const void*>(qp + 64 * k));
}
inline void StorePairChunk(uint8_t* qp, int64_t k, __m512i v) {
  _mm512_store_si512(reinterpret_cast<void*>(qp + 64 * k), v);
}

// ---- the one-token activation table ----

// The activation vectors are the same for every group, so the driver writes
// them once per call into a table: vector k (64 bytes) holds the dword of
// elements 8k .. 8k + 3 in lanes 0-7 and that of 8k + 4 .. 8k + 7 in lanes
// 8-15. `row` is the token's activation row: blocks of block_bytes, each
// with block_elems quants at qs_offset.
inline void BuildActTable(const uint8_t* row, size_t block_bytes, size_t qs_offset,
                          int64_t block_elems, int64_t cols, uint8_t* table) {
  const __m512i pick =
      _mm512_mask_blend_epi32(0xFF00, _mm512_setzero_si512(), _mm512_set1_epi32(1));
  for (int64_t e = 0; e < cols; e += 8) {
    const uint8_t* q = row + (e / block_elems) * block_bytes + qs_offset + e % block_elems;
    const __m512i v = _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
    StorePairChunk(table, e / 8, _mm512_permutexvar_epi32(pick, v));
  }
}

// ---- a few tokens against one group at a time (batched decode) ----
//
// Two to kDuoMaxTokens tokens read the stored groups one at a time, in
// passes of up to kTile tokens (gemm_packed_duo_avx512.cc). Gemm hands them
// there for the kernels that name their type as kDuoType.
constexpr int kDuoMaxTokens = 2 * kTile;

template <template <int> class Kernel>
concept DuoKernel = requires {
  Kernel<1>::kDuoType;
};

// ---- the loop over group pairs and tokens, shared by every type ----

// Runs Kernel<n> for 1 <= n <= N: its RunStored (quants unpacked from the
// stored groups) when kStored, else its Run (quants from the pair buffer qp).
template <template <int> class Kernel, bool kStored, int N = kTile>
void RunTile(int n, const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
             const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  if constexpr (N > 1) {
    if (n < N) return RunTile<Kernel, kStored, N - 1>(n, w, g0, g1, qp, a, t0, out, out_stride);
  }
  if constexpr (kStored) {
    Kernel<N>::RunStored(w, g0, g1, qp, a, t0, out, out_stride);
  } else {
    Kernel<N>::Run(w, g0, g1, qp, a, t0, out, out_stride);
  }
}

template <template <int> class Kernel>
void Gemm(const PackedMatrix& w, int64_t row_begin, int64_t row_end, const GemmActivations& a,
          float* y, int64_t y_stride) {
  const int64_t g_begin = row_begin / kPackRows;
  const int64_t g_end = (row_end + kPackRows - 1) / kPackRows;
  alignas(64) float partial[kTile * kPairRows];
  // One token (decode) is bound by reading the weights, and a pair is two
  // streams 1-5 KiB apart, each with its scale rows read a few bytes per
  // block: the hardware prefetchers follow that poorly, and software
  // prefetching a pair ahead did not help. Each group runs alone instead
  // (RunOne, two chunks of the group per ZMM), so the weights are read in
  // one stream in memory order (Gemma 3's 178 MB Q8_0 output matrix, one
  // thread, Zen 5 VM: 17.1 -> 8.8 ms; decode at depth 512 on 2 threads
  // 1.35x). Every row gets the bits it got from the pair.
  if (a.n_tokens == 1) {
    thread_local ThreadBuffer act_table;
    uint8_t* table = act_table.Get(static_cast<size_t>(8 * w.cols));
    BuildActTable(a.rows, Kernel<1>::kActBlockBytes, Kernel<1>::kActQsOffset,
                  Kernel<1>::kActBlockElems, w.cols, table);
    for (int64_t g = g_begin; g < g_end; ++g) {
      const int64_t r0 = std::max(row_begin, g * kPackRows);
      const int64_t r1 = std::min(row_end, (g + 1) * kPackRows);
      if (r1 - r0 == kPackRows) {
        Kernel<1>::RunOne(w, w.Group(g), a, 0, table, y + (r0 - row_begin));
        continue;
      }
      Kernel<1>::RunOne(w, w.Group(g), a, 0, table, partial);
      for (int64_t r = r0; r < r1; ++r) y[r - row_begin] = partial[r - g * kPackRows];
    }
    return;
  }
  if constexpr (DuoKernel<Kernel>) {
    if (a.n_tokens <= kDuoMaxTokens) {
      static const GemmPackedFn duo = Avx512VnniGemmPackedDuo(Kernel<1>::kDuoType);
      return duo(w, row_begin, row_end, a, y, y_stride);
    }
  }
  // Up to one register tile of tokens reads the stored groups and unpacks
  // them in registers; more tokens share one copy of each pair's quants per
  // token chunk instead (the pair buffer, above).
  const bool stored = a.n_tokens <= kTile;
  uint8_t* qp = nullptr;
  if (!stored) {
    thread_local ThreadBuffer pair_buffer;
    qp = pair_buffer.Get(Kernel<kTile>::PairBufferBytes(w.cols));
  }
  for (int64_t c0 = 0; c0 < a.n_tokens; c0 += kTokenChunk) {
    const int64_t c1 = std::min(a.n_tokens, c0 + kTokenChunk);
    for (int64_t g = g_begin; g < g_end; g += 2) {
      const bool pair = g + 1 < g_end;
      const uint8_t* g0 = w.Group(g);
      const uint8_t* g1 = pair ? w.Group(g + 1) : g0;
      if (!stored) Kernel<kTile>::ExpandPair(w, g0, g1, qp);
      const int64_t r0 = std::max(row_begin, g * kPackRows);
      const int64_t r1 = std::min(row_end, g * kPackRows + (pair ? kPairRows : kPackRows));
      const bool whole = r1 - r0 == kPairRows;
      for (int64_t t = c0; t < c1; t += kTile) {
        const int n = static_cast<int>(std::min<int64_t>(kTile, c1 - t));
        float* out = whole ? y + t * y_stride + (r0 - row_begin) : partial;
        const int64_t out_stride = whole ? y_stride : kPairRows;
        if (stored) {
          RunTile<Kernel, true>(n, w, g0, g1, qp, a, t, out, out_stride);
        } else {
          RunTile<Kernel, false>(n, w, g0, g1, qp, a, t, out, out_stride);
        }
        if (whole) continue;
        for (int k = 0; k < n; ++k) {
          for (int64_t r = r0; r < r1; ++r) {
            y[(t + k) * y_stride + (r - row_begin)] = partial[k * kPairRows + (r - g * kPackRows)];
          }
        }
      }
    }
  }
}

// Run reads the pair buffer (ExpandPair fills it), RunStored the matrix's
// stored groups, RunOne one token against one stored group (decode) with
// the activation table (its blocks: kAct*); kDuoType, where a kernel has
// one, names the type whose few-token kernels Gemm runs (DuoKernel).
struct ActQ8_0 {
  static size_t PairBufferBytes(int64_t cols) { return static_cast<size_t>(kPairRows * cols); }
  static constexpr size_t kActBlockBytes = sizeof(BlockQ8_0);
  static constexpr size_t kActQsOffset = offsetof(BlockQ8_0, qs);
  static constexpr int64_t kActBlockElems = 32;
};
struct ActQ8_1 {
  static size_t PairBufferBytes(int64_t cols) { return static_cast<size_t>(kPairRows * cols); }
  static constexpr size_t kActBlockBytes = sizeof(quant::BlockQ8_1);
  static constexpr size_t kActQsOffset = offsetof(quant::BlockQ8_1, qs);
  static constexpr int64_t kActBlockElems = 32;
};
struct ActQ8_K {
  static size_t PairBufferBytes(int64_t cols) { return static_cast<size_t>(kPairRows * cols); }
  static constexpr size_t kActBlockBytes = sizeof(BlockQ8_K);
  static constexpr size_t kActQsOffset = offsetof(BlockQ8_K, qs);
  static constexpr int64_t kActBlockElems = kQkK;
};

}  // namespace
}  // namespace ellm::kernels::internal

ELLM_ISA_END

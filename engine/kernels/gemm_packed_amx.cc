// AMX packed GEMM for prefill: the integer sums of 16 tokens x 16 weight
// rows per tile instruction, the float work per block as the AVX-512 VNNI
// kernels do it.
//
// Layout. A register tile of the VNNI kernels is two adjacent groups (16
// rows); their pair buffer (gemm_packed_avx512_pairs.h, filled once per 64
// tokens) holds, per 4 consecutive elements, 64 bytes: 4 unsigned quants of
// each of the 16 rows. That is AMX's B layout (K/4 rows of 4 * N bytes, N =
// 16), so the AMX kernels read the same copy as tiles. A slice is the
// elements one scale covers, 32 (a block, a Q4_K group) or 16 (a Q6_K
// group); per slice:
//   C: 16 tokens x 16 rows of i32 (the slice's sums)
//   A: 16 tokens x the slice's activation bytes, straight from the
//      activation rows (tile stride: the row stride)
//   B: the slice's pair-buffer chunks (32 or 16 elements x 16 rows)
// in two sets of tiles (0-2, 3-5), so that the next slice's product runs
// while this one's sums go through the vector epilogue.
// TDPBSUD (signed activations, unsigned weights) gives, per token and row,
// exactly the i32 VPDPBUSD gives the VNNI kernel (the same products, summed
// exactly: the VNNI file states the bounds). Row t of C stored to memory is
// then the VNNI kernel's `isum[t]` vector (rows in lanes), and from there
// every float operation is the VNNI kernel's, in its order (built with
// -ffp-contract=off): results equal RefVecDot, and so the VNNI and AVX2
// kernels, bit for bit.
//
// Scales apply per 32-element block (Q8_0 family) or group (Q4_K, Q5_K; 16
// for Q6_K), so K is 32 (16) per tile instruction, not AMX's 64, and C goes
// to memory once per block: the price of equal bits with per-block scales.
//
// Tokens: a product of at least kAmxMinTokens tokens runs in tiles of 16;
// the last tile of a product whose token count is not a multiple of 16 is
// moved back to end at the last token (its first tokens are computed twice,
// to the same bits), so every tile has 16 rows and one config per slice
// size serves every call.
// Fewer tokens (decode) run the VNNI kernel. Q2_K, Q3_K and IQ4_XS have no
// AMX kernel (their VNNI kernels live in their own files): the dispatch
// table's AMX level falls back to VNNI for them.
//
// Hardware: the caller has checked HostCpu().Level() >= IsaLevel::kAmx,
// which includes Linux's permission for the tile state. Each call loads its
// tile config and releases the tiles before it returns.
#include "kernels/gemm_packed_isa.h"

#include "kernels/amx_intrin.h"
#include "kernels/isa_target.h"

#if defined(ELLM_AMX_KERNELS)

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/gemm_packed_avx512_common.h"
#include "kernels/gemm_packed_avx512_pairs.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

ELLM_ISA_BEGIN(ELLM_ISA_AMX)

namespace ellm::kernels::internal {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQkK;
using quant::TensorType;

// Tokens per tile: the rows of A and C.
constexpr int kAmxTokens = 16;
static_assert(kAmxMinTokens >= kAmxTokens);

// LDTILECFG's operand (palette 1). Two sets of (C, A, B) tiles, 0-2 and
// 3-5, so that one slice's product runs while the last one's sums are
// used; A has kSliceBytes columns, B kSliceBytes / 4 rows. Constants: GCC's
// _tile_loadconfig names only the first 8 bytes as read by its asm, so a
// config written just before the call could be partly optimised away.
template <int kSliceBytes>
constexpr AmxTileConfig kAmxConfig = {
    1,
    0,
    {},
    {64, kSliceBytes, 64, 64, kSliceBytes, 64},
    {kAmxTokens, kAmxTokens, kSliceBytes / 4, kAmxTokens, kAmxTokens, kSliceBytes / 4}};

// One tile product's i32 sums, C row t (16 rows' lanes) at 16 * t.
using CTile = int32_t[kAmxTokens * kPairRows];

inline __m512i CRow(const CTile& c, int t) {
  return _mm512_load_si512(reinterpret_cast<const void*>(c + kPairRows * t));
}

// The products of one slice (a block or group of every token and row):
// A's first row at act (next rows a_stride on), B's kSliceBytes / 4 rows
// at b, sums to c. Tile set `set` (0 or 1); GCC's intrinsics need literal
// tile numbers.
inline void SliceSums(int set, const uint8_t* act, size_t a_stride, const uint8_t* b, CTile& c) {
  if (set == 0) {
    _tile_zero(0);
    _tile_loadd(1, act, a_stride);
    _tile_loadd(2, b, 64);
    _tile_dpbsud(0, 1, 2);
    _tile_stored(0, c, 64);
  } else {
    _tile_zero(3);
    _tile_loadd(4, act, a_stride);
    _tile_loadd(5, b, 64);
    _tile_dpbsud(3, 4, 5);
    _tile_stored(3, c, 64);
  }
}

// Runs slices 0 .. n - 1 through the tiles in order, calling use(i, sums
// of slice i); slice i + 1's product is issued before use(i) runs, on the
// other tile set, so the tile unit and the vector epilogue overlap.
// where(i) gives slice i's {A's first row, B}.
template <class Where, class Use>
inline void ForEachSlice(int64_t n, size_t a_stride, Where&& where, Use&& use) {
  alignas(64) CTile c[2];
  const auto issue = [&](int64_t i) {
    const auto [act, b] = where(i);
    SliceSums(static_cast<int>(i % 2), act, a_stride, b, c[i % 2]);
  };
  issue(0);
  for (int64_t i = 0; i < n; ++i) {
    if (i + 1 < n) issue(i + 1);
    use(i, c[i % 2]);
  }
}

using SlicePtrs = std::pair<const uint8_t*, const uint8_t*>;

// ---- Q8_0, Q5_0, Q4_0, IQ4_NL (Q8_0 activations), Q5_1, Q4_1 (kMin, Q8_1) ----
//
// As Tile32 of gemm_packed_avx512.cc for 16 tokens from the pair buffer qp;
// a slice is a 32-element block.
template <int kOffset, bool kMin = false>
void Tile32Amx(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
               const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const int64_t nb = w.cols / 32;
  const size_t m_base = PackedScaleBytes32(nb);
  using ActBlock = std::conditional_t<kMin, quant::BlockQ8_1, BlockQ8_0>;
  const uint8_t* act_qs = a.rows + t0 * a.stride + offsetof(ActBlock, qs);
  const float* act_d = a.block_d + t0 * nb;
  [[maybe_unused]] const int32_t* act_sum = kMin ? nullptr : a.block_sum + t0 * nb;
  [[maybe_unused]] const float* act_s = kMin ? a.block_s + t0 * nb : nullptr;
  constexpr int kBias = kMin ? 0 : kOffset == 0 ? 128 : kOffset;
  __m512 acc[kAmxTokens];
  for (int t = 0; t < kAmxTokens; ++t) acc[t] = _mm512_setzero_ps();
  const auto where = [&](int64_t b) {
    return SlicePtrs(act_qs + b * sizeof(ActBlock), qp + 64 * 8 * b);
  };
  ForEachSlice(nb, a.stride, where, [&](int64_t b, const CTile& c) {
    const __m512 wd = Halves16(g0 + 2 * kPackRows * b, g1 + 2 * kPackRows * b);
    for (int t = 0; t < kAmxTokens; ++t) {
      __m512i ints = CRow(c, t);
      if constexpr (!kMin) {
        ints = _mm512_sub_epi32(ints, _mm512_set1_epi32(kBias * act_sum[t * nb + b]));
      }
      const __m512 da = _mm512_set1_ps(act_d[t * nb + b]);
      const __m512 fi = _mm512_cvtepi32_ps(ints);
      __m512 term;
      if constexpr (kMin) {  // as DotQ4_1, DotQ5_1
        const size_t mo = m_base + 2 * kPackRows * b;
        term = _mm512_add_ps(
            _mm512_mul_ps(_mm512_mul_ps(wd, da), fi),
            _mm512_mul_ps(Halves16(g0 + mo, g1 + mo), _mm512_set1_ps(act_s[t * nb + b])));
      } else if constexpr (kOffset == 0) {
        term = _mm512_mul_ps(fi, _mm512_mul_ps(wd, da));  // as DotQ8_0
      } else if constexpr (kOffset == 8) {
        term = _mm512_mul_ps(_mm512_mul_ps(fi, wd), da);  // as DotQ4_0
      } else {
        term = _mm512_mul_ps(_mm512_mul_ps(wd, da), fi);  // as DotQ5_0, DotIq4Nl
      }
      acc[t] = _mm512_add_ps(acc[t], term);
    }
  });
  for (int t = 0; t < kAmxTokens; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- Q4_K, Q5_K against Q8_K ----
//
// As TileQ4_K for 16 tokens from the pair buffer (its ready scale and min
// vectors included); slice 8 s + g is 32-element group g of super-block s.
void TileQ4_KAmx(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
                 const GemmActivations& a, int64_t t0, size_t sb_bytes, float* out,
                 int64_t out_stride) {
  const int64_t nsb = w.cols / kQkK;
  const BlockQ8_K* act[kAmxTokens];
  for (int t = 0; t < kAmxTokens; ++t) {
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  }
  const uint8_t* act_qs = a.rows + t0 * a.stride + offsetof(BlockQ8_K, qs);
  __m512 acc[kAmxTokens];
  __m512i isum[kAmxTokens];
  for (int t = 0; t < kAmxTokens; ++t) acc[t] = _mm512_setzero_ps();
  const auto where = [&](int64_t i) {
    return SlicePtrs(act_qs + (i / 8) * sizeof(BlockQ8_K) + 32 * (i % 8), qp + 64 * 8 * i);
  };
  ForEachSlice(8 * nsb, a.stride, where, [&](int64_t i, const CTile& c) {
    const int64_t s = i / 8;
    const int g = static_cast<int>(i % 8);
    const uint8_t* ready = qp + Q4_KPairScales(nsb, s);
    if (g == 0) {
      for (int t = 0; t < kAmxTokens; ++t) isum[t] = _mm512_setzero_si512();
    }
    const __m512i sc = PairChunk(ready, g);
    for (int t = 0; t < kAmxTokens; ++t) {
      isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(CRow(c, t), sc));
    }
    if (g < 7) return;
    const uint8_t* sb0 = g0 + s * sb_bytes;
    const uint8_t* sb1 = g1 + s * sb_bytes;
    const __m512 d = Halves16(sb0 + kQ4KPackedD, sb1 + kQ4KPackedD);
    const __m512 dmin = Halves16(sb0 + kQ4KPackedDmin, sb1 + kQ4KPackedDmin);
    for (int t = 0; t < kAmxTokens; ++t) {
      __m512i msum = _mm512_setzero_si512();
      for (int k = 0; k < 8; ++k) {
        msum = _mm512_dpwssd_epi32(msum, PairChunk(ready, 8 + k), Bcast4(act[t][s].bsums + 2 * k));
      }
      const __m512 da = _mm512_set1_ps(act[t][s].d);
      const __m512 x =
          _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum[t])),
                        _mm512_mul_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(msum)));
      acc[t] = _mm512_add_ps(acc[t], x);
    }
  });
  for (int t = 0; t < kAmxTokens; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- Q6_K against Q8_K ----
//
// As TileQ6_K for 16 tokens from the pair buffer, the scales from the
// stored groups; slice 16 s + g is 16-element group g of super-block s.
void TileQ6_KAmx(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
                 const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
  const int64_t nsb = w.cols / kQkK;
  const BlockQ8_K* act[kAmxTokens];
  for (int t = 0; t < kAmxTokens; ++t) {
    act[t] = reinterpret_cast<const BlockQ8_K*>(a.rows + (t0 + t) * a.stride);
  }
  const uint8_t* act_qs = a.rows + t0 * a.stride + offsetof(BlockQ8_K, qs);
  __m512 acc[kAmxTokens];
  __m512i isum[kAmxTokens];
  for (int t = 0; t < kAmxTokens; ++t) acc[t] = _mm512_setzero_ps();
  __m512i pair = _mm512_setzero_si512();  // the scales of groups 2p and 2p + 1, as i16
  const auto where = [&](int64_t i) {
    return SlicePtrs(act_qs + (i / 16) * sizeof(BlockQ8_K) + 16 * (i % 16), qp + 64 * 4 * i);
  };
  ForEachSlice(16 * nsb, a.stride, where, [&](int64_t i, const CTile& c) {
    const int64_t s = i / 16;
    const int g = static_cast<int>(i % 16), p = g / 2;
    const uint8_t* sb0 = g0 + s * kQ6KStoredBytes;
    const uint8_t* sb1 = g1 + s * kQ6KStoredBytes;
    if (g == 0) {
      for (int t = 0; t < kAmxTokens; ++t) isum[t] = _mm512_setzero_si512();
    }
    if (g % 2 == 0) {
      const size_t sc_off = kQ6KPackedSc + 16 * p;
      pair = _mm512_cvtepi8_epi16(Load2x16(sb0 + sc_off, sb1 + sc_off));
      // The stored q is q + 32: subtract 32 * sum_g sc_g * bsums_g, per pair.
      const __m512i neg32 = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(pair, 5));
      for (int t = 0; t < kAmxTokens; ++t) {
        isum[t] = _mm512_dpwssd_epi32(isum[t], neg32, Bcast4(act[t][s].bsums + 2 * p));
      }
    }
    const __m512i sc = g % 2 == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16)
                                  : _mm512_srai_epi32(pair, 16);
    for (int t = 0; t < kAmxTokens; ++t) {
      isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(CRow(c, t), sc));
    }
    if (g < 15) return;
    const __m512 d = Halves16(sb0 + kQ6KPackedD, sb1 + kQ6KPackedD);
    for (int t = 0; t < kAmxTokens; ++t) {
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[t][s].d)),
                                                   _mm512_cvtepi32_ps(isum[t])));
    }
  });
  for (int t = 0; t < kAmxTokens; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
}

// ---- the loop over token chunks, group pairs and 16-token tiles ----

// Kernel: kType, kSliceBytes (activation bytes per tile product),
// ExpandPair (fills the pair buffer), PairBufferBytes(cols) and Run (16
// tokens from t0 of one pair).
template <class Kernel>
void GemmAmx(const PackedMatrix& w, int64_t row_begin, int64_t row_end, const GemmActivations& a,
             float* y, int64_t y_stride) {
  if (a.n_tokens < kAmxMinTokens) {
    static const GemmPackedFn vnni = Avx512VnniGemmPacked(Kernel::kType);
    return vnni(w, row_begin, row_end, a, y, y_stride);
  }
  const int64_t g_begin = row_begin / kPackRows;
  const int64_t g_end = (row_end + kPackRows - 1) / kPackRows;
  thread_local ThreadBuffer pair_buffer;
  uint8_t* qp = pair_buffer.Get(Kernel::PairBufferBytes(w.cols));
  alignas(64) float partial[kAmxTokens * kPairRows];
  _tile_loadconfig(&kAmxConfig<Kernel::kSliceBytes>);
  for (int64_t c0 = 0; c0 < a.n_tokens; c0 += kTokenChunk) {
    const int64_t c1 = std::min(a.n_tokens, c0 + kTokenChunk);
    for (int64_t g = g_begin; g < g_end; g += 2) {
      const bool pair = g + 1 < g_end;
      const uint8_t* g0 = w.Group(g);
      const uint8_t* g1 = pair ? w.Group(g + 1) : g0;
      Kernel::ExpandPair(w, g0, g1, qp);
      // GCC's _tile_loadd does not tell the compiler which memory it reads:
      // the pair buffer's stores must not move past the tile loads.
      asm volatile("" ::: "memory");
      const int64_t r0 = std::max(row_begin, g * kPackRows);
      const int64_t r1 = std::min(row_end, g * kPackRows + (pair ? kPairRows : kPackRows));
      const bool whole = r1 - r0 == kPairRows;
      for (int64_t t = c0; t < c1; t += kAmxTokens) {
        const int64_t t0 = std::min(t, a.n_tokens - kAmxTokens);  // a full tile, see the top
        float* out = whole ? y + t0 * y_stride + (r0 - row_begin) : partial;
        const int64_t out_stride = whole ? y_stride : kPairRows;
        Kernel::Run(w, g0, g1, qp, a, t0, out, out_stride);
        if (whole) continue;
        for (int k = 0; k < kAmxTokens; ++k) {
          for (int64_t r = r0; r < r1; ++r) {
            y[(t0 + k) * y_stride + (r - row_begin)] = partial[k * kPairRows + (r - g * kPackRows)];
          }
        }
      }
    }
  }
  _tile_release();
}

template <TensorType kT, int kOffset, bool kMin = false>
struct Block32Amx : ActQ8_0 {
  static constexpr TensorType kType = kT;
  static constexpr int kSliceBytes = 32;
  static constexpr auto ExpandPair = ExpandPair32<kOffset, kMin>;
  static constexpr auto Run = Tile32Amx<kOffset, kMin>;
};
template <TensorType kT, bool kFive>
struct Q4_KAmx : ActQ8_K {
  static constexpr TensorType kType = kT;
  static constexpr int kSliceBytes = 32;
  static size_t PairBufferBytes(int64_t cols) {
    return static_cast<size_t>(cols / kQkK) * (kQ4KPairQuantBytes + kQ4KPairScaleBytes);
  }
  static constexpr auto ExpandPair = ExpandPairK4<kFive>;
  static void Run(const PackedMatrix& w, const uint8_t* g0, const uint8_t* g1, const uint8_t* qp,
                  const GemmActivations& a, int64_t t0, float* out, int64_t out_stride) {
    TileQ4_KAmx(w, g0, g1, qp, a, t0, kFive ? kQ5KPackedBytes : kQ4KPackedBytes, out, out_stride);
  }
};
struct Q6_KAmx : ActQ8_K {
  static constexpr TensorType kType = TensorType::kQ6_K;
  static constexpr int kSliceBytes = 16;
  static constexpr auto ExpandPair = ExpandPairQ6_K;
  static constexpr auto Run = TileQ6_KAmx;
};

}  // namespace

GemmPackedFn AmxGemmPacked(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return GemmAmx<Block32Amx<TensorType::kQ8_0, 0>>;
    case TensorType::kQ5_0:
      return GemmAmx<Block32Amx<TensorType::kQ5_0, 16>>;
    case TensorType::kQ4_0:
      return GemmAmx<Block32Amx<TensorType::kQ4_0, 8>>;
    case TensorType::kIQ4_NL:
      return GemmAmx<Block32Amx<TensorType::kIQ4_NL, kIq4NlOffset>>;
    case TensorType::kQ5_1:
      return GemmAmx<Block32Amx<TensorType::kQ5_1, 16, true>>;
    case TensorType::kQ4_1:
      return GemmAmx<Block32Amx<TensorType::kQ4_1, 8, true>>;
    case TensorType::kQ4_K:
      return GemmAmx<Q4_KAmx<TensorType::kQ4_K, false>>;
    case TensorType::kQ5_K:
      return GemmAmx<Q4_KAmx<TensorType::kQ5_K, true>>;
    case TensorType::kQ6_K:
      return GemmAmx<Q6_KAmx>;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AMX

namespace ellm::kernels::internal {
GemmPackedFn AmxGemmPacked(quant::TensorType) { return nullptr; }
}  // namespace ellm::kernels::internal

#endif

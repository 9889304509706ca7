// Tile primitives of attention (model/attention.cc): scores of a tile of
// query rows against a tile of keys, the weighted sum of a tile of values,
// a vector exp, and decoding KV storage rows to f32. Contracts:
//   Scores(rows, keys, dim, q, qs, k, ks, s, ss):
//     s[r*ss + j] = sum_d q[r*qs + d] * k[j*ks + d]      (r < rows, j < keys)
//   Accumulate(rows, keys, dim, p, ps, v, vs, o, os):
//     o[r*os + d] += sum_j p[r*ps + j] * v[j*vs + d]     (r < rows, d < dim)
//   Exp(n, x, y):       y[i] = exp(x[i]); exp(-inf) = 0; x may alias y
//   F16ToF32 / Bf16ToF32(n, src, dst): widen n stored halves
//   Q8_0ToF32(n, src, dst): decode n values stored as Q8_0 blocks (n a
//     multiple of 32), as quant::DequantizeQ8_0: q * d, bit for bit
//   ScoresF16, AccumulateF16 / AccumulateBf16: Scores and Accumulate with K
//     or V given as stored halves, widened as they are read; equal bit for
//     bit to widening the rows first and calling the f32 version (widening
//     is exact), without the f32 copy of the tile.
//   ScoresBf16: bf16 pair dot products, as VDPBF16PS computes them (and
//     llama.cpp's ggml_vec_dot_bf16): each q value is taken as bf16 (its
//     top 16 bits: exact for the bf16-rounded queries attention passes), and
//     each score is 8 lanes, lane i adding, for each 16 dimensions from c,
//     q*k at c + 2i + 1 and then at c + 2i (each product exact, each
//     addition one f32 rounding), then the lanes' Hsum4 tree
//     ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then, past the
//     last multiple of 16, a sequential sum of the remaining products added
//     to it; denormal inputs and results are zeros of their sign throughout
//     (the instruction's DAZ and FTZ). Half the instructions of the widening
//     path where the CPU has AVX512_BF16, the same products, f32 sums in
//     another order.
//   ScoresBf16Wide: Scores with K as bf16 halves widened as read, as
//     ScoresF16 (equal bit for bit to widening first and calling Scores):
//     the bf16 cache's scores where pair dot products are not the faster
//     (CpuFeatures::FastBf16Dot).
//   InterleaveBf16Pairs(keys, dim, v, vs, vp): V rows as pairs for the
//     next kernel: vp[m * dim + d] = v[2m][d] | v[2m + 1][d] << 16, the
//     missing row of an odd count as zeros. Takes a range to prefetch as
//     the fused kernels do (decode: the next tile's V).
//   AccumulateBf16Pairs(rows, keys, dim, p, ps, vp, o, os): Accumulate with
//     the weights taken as bf16 (the top halves of p: exact for weights
//     rounded to bf16 beforehand) and V as pairs, in VDPBF16PS's order:
//     for each pair m in turn, o += p[2m + 1] v[2m + 1] then += p[2m] v[2m]
//     (the missing key of an odd count weighs 0), each addition one f32
//     rounding, denormal inputs and results flushed as in ScoresBf16.
//     The opt-in bf16 weights of attention (kernels 2x the f32 FMA rate).
//   ScoresBf16Tiles / AccumulateBf16Tiles: Scores (K as bf16) and
//     AccumulateBf16Pairs (V as pairs, weights taken as bf16) in AMX
//     TDPBF16PS's arithmetic (kernels/amx_emu.h states it), the products of
//     AttnScores::kTiles. Inputs are read as bf16 (q and p: their top
//     halves) and zero-padded to whole chunks of 32 (dimensions for the
//     scores, keys = 16 pairs for the weighted sum). Per output and chunk,
//     two f32 chains (the even and the odd element of each pair) start at
//     zero and take one fma per pair, in order; then out = out + (even +
//     odd), the scores' out starting at +0 and the weighted sum's at o.
//     Denormal inputs and results are zeros of their sign throughout (DAZ,
//     FTZ). The ignored prefetch arguments keep ScoresBf16's signature.
//     AMX where the CPU has it (attn_tile_amx.cc); the references
//     elsewhere (engine.cc refuses kTiles without AMX: they serve tests).
// The fused kernels also take a byte range to bring into the cache while they work
//     (prefetch, prefetch_bytes: the next key tile's K or V in decode;
//     nullptr, 0 for none), asked for a line or a few per step of their
//     inner loop (spread_prefetch.h); a hint, never a change to a result
//     (the references ignore it).
// All f32, row-major with the given strides (in elements); outputs do not
// alias inputs except where said. The SIMD versions differ from the
// references only in the order of f32 additions and in Exp's last bits
// (relative error below 2e-7 over [-87, 88]; tests state the tolerance).
// Each output element's arithmetic depends only on its own inputs, never on
// its position in the tile or the tile's size (so batched and one-token
// attention agree bit for bit).
// Pure, thread-safe, no allocation.
#pragma once

#include <cstdint>

#include "ellm/engine/cpu_features.h"

namespace ellm::kernels {

struct AttnTileKernels {
  void (*scores)(int rows, int keys, int dim, const float* q, int64_t q_stride, const float* k,
                 int64_t k_stride, float* s, int64_t s_stride);
  void (*accumulate)(int rows, int keys, int dim, const float* p, int64_t p_stride, const float* v,
                     int64_t v_stride, float* o, int64_t o_stride);
  void (*exp)(int64_t n, const float* x, float* y);
  void (*f16_to_f32)(int64_t n, const uint16_t* src, float* dst);
  void (*bf16_to_f32)(int64_t n, const uint16_t* src, float* dst);
  using HalfScores = void (*)(int rows, int keys, int dim, const float* q, int64_t q_stride,
                              const uint16_t* k, int64_t k_stride, float* s, int64_t s_stride,
                              const void* prefetch, int64_t prefetch_bytes);
  using HalfAccumulate = void (*)(int rows, int keys, int dim, const float* p, int64_t p_stride,
                                  const uint16_t* v, int64_t v_stride, float* o, int64_t o_stride,
                                  const void* prefetch, int64_t prefetch_bytes);
  HalfScores scores_f16;
  HalfAccumulate accumulate_f16;
  HalfScores scores_bf16;
  HalfAccumulate accumulate_bf16;
  void (*q8_0_to_f32)(int64_t n, const uint8_t* src, float* dst);
  void (*interleave_bf16_pairs)(int keys, int dim, const uint16_t* v, int64_t v_stride,
                                uint32_t* vp, const void* prefetch, int64_t prefetch_bytes);
  void (*accumulate_bf16_pairs)(int rows, int keys, int dim, const float* p, int64_t p_stride,
                                const uint32_t* vp, float* o, int64_t o_stride);
  HalfScores scores_bf16_wide;
  HalfScores scores_bf16_tiles;
  void (*accumulate_bf16_tiles)(int rows, int keys, int dim, const float* p, int64_t p_stride,
                                const uint32_t* vp, float* o, int64_t o_stride);
};

// The implementation for HostCpu().Level(), chosen once. The AVX-512 level
// computes exactly what the AVX2 one does (same operations per output).
const AttnTileKernels& GetAttnTile();
const AttnTileKernels& GetAttnTileAt(IsaLevel level);

namespace internal {
extern const AttnTileKernels kAttnTileRef;   // attn_tile_ref.cc
extern const AttnTileKernels kAttnTileAvx2;  // attn_tile_avx2.cc
// attn_tile_avx512.cc: puts its Scores and Accumulate kernels into `k` (no
// change when the compiler could not build them), and calls
// UseAvx512Bf16AttnTile.
void UseAvx512AttnTile(AttnTileKernels* k);
// attn_tile_avx512_bf16.cc: puts its ScoresBf16 and AccumulateBf16Pairs into
// `k` where the CPU has AVX512_BF16 (no change elsewhere, or when the
// compiler could not build them).
void UseAvx512Bf16AttnTile(AttnTileKernels* k);
// attn_tile_amx.cc: puts its ScoresBf16Tiles and AccumulateBf16Tiles into
// `k` (no change when the compiler could not build them). The caller has
// checked that the CPU has AMX-BF16 and Linux granted the tiles.
void UseAmxAttnTile(AttnTileKernels* k);
}  // namespace internal

}  // namespace ellm::kernels

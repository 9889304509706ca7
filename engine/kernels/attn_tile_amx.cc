// AMX versions of attn_tile.h's ScoresBf16Tiles and AccumulateBf16Tiles:
// attention's two products as bf16 tiles with f32 sums (TDPBF16PS), the
// arithmetic of AttnScores::kTiles. The references in attn_tile_ref.cc
// write the same arithmetic out; the tests hold these to them bit for bit,
// on the real instructions where the CPU has AMX and on our model of them
// (amx_emu.h) everywhere.
//
// Scores, S = Q K^T, per 16 query rows x 16 keys (one C tile):
//   A: 16 rows of Q as bf16, 32 dimensions (64 bytes) a chunk, from a
//      packed copy of the call's rows (zero-padded to whole tiles);
//   B: the chunk's 16 dimension pairs x 16 keys (a dword per key), K's rows
//      transposed in 16 x 16 dword blocks once per call, so every row tile
//      of the call reads the same copy (prefill: up to 16 row tiles);
//   C: stored straight into s where the tile lies inside rows x keys.
// Weighted sum, O += P V, per 16 rows x 16 output columns:
//   A: 16 rows of P as bf16, 32 keys a chunk (packed as Q is);
//   B: 16 key pairs x 16 columns, read in place from the pairs
//      InterleaveBf16Pairs wrote (row stride dim * 4 bytes): that is
//      already TDPBF16PS's B layout; a last partial chunk is copied with
//      zeros past the last pair;
//   C: o itself, loaded and stored back around the chunks.
// Blocks of 2 x 2 C tiles (tiles 0-3), two A tiles (4, 5) and two B tiles
// (6, 7) reuse each loaded tile twice.
//
// Hardware: the caller has checked that the CPU has AMX-BF16 and that Linux
// granted the tile state. Each call loads its tile config and releases the
// tiles before it returns.
#include "kernels/attn_tile.h"

#include "kernels/amx_intrin.h"
#include "kernels/isa_target.h"

#if defined(ELLM_AMX_KERNELS)

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

ELLM_ISA_BEGIN(ELLM_ISA_AMX)

namespace ellm::kernels::internal {
namespace {

constexpr int kRows = 16;   // rows of a tile (query rows; K^T's dimension pairs)
constexpr int kChunk = 32;  // bf16 elements of a tile row (64 bytes)
constexpr int kCols = 16;   // dwords of a tile row: keys of S, columns of O

// LDTILECFG's operand: palette 1, tiles 0-7 each 16 rows x 64 bytes. A
// constant: GCC's _tile_loadconfig names only its first 8 bytes as read.
constexpr AmxTileConfig kConfig = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

// GCC's tile loads and stores do not tell the compiler which memory they
// touch: packed copies must be complete before, and stored tiles read only
// after, these points.
inline void MemoryBarrier() { asm volatile("" ::: "memory"); }

// TILESTORED / TILELOADD of C tile `tile` (0-3): GCC's macros paste the
// register number into the instruction, so it must be a literal.
inline void StoreC(int tile, void* base, int64_t stride) {
  switch (tile) {
    case 0:
      _tile_stored(0, base, stride);
      break;
    case 1:
      _tile_stored(1, base, stride);
      break;
    case 2:
      _tile_stored(2, base, stride);
      break;
    default:
      _tile_stored(3, base, stride);
      break;
  }
}
inline void LoadC(int tile, const void* base, int64_t stride) {
  switch (tile) {
    case 0:
      _tile_loadd(0, base, stride);
      break;
    case 1:
      _tile_loadd(1, base, stride);
      break;
    case 2:
      _tile_loadd(2, base, stride);
      break;
    default:
      _tile_loadd(3, base, stride);
      break;
  }
}

// The first n (0-16) dwords at p, zeros after them; reads nothing past
// them (SIMDe's masked loads read the whole vector).
inline __m512i LoadFirst(const void* p, int n) {
  if (n == 16) return _mm512_loadu_si512(p);
  alignas(64) uint32_t part[16] = {};
  if (n > 0) std::memcpy(part, p, static_cast<size_t>(n) * 4);
  return _mm512_load_si512(part);
}

// n_rows rows of n floats (row stride `stride`) as bf16 top halves into
// `out` (rows `width` halves apart), zero past n and past n_rows up to
// rows_pad: A tiles of Q or of P.
void PackTopHalves(const float* x, int64_t stride, int n_rows, int n, int rows_pad, int width,
                   uint16_t* out) {
  for (int r = 0; r < rows_pad; ++r) {
    uint16_t* o = out + int64_t{r} * width;
    for (int d = 0; d < width; d += 16) {
      const int left = r < n_rows ? std::clamp(n - d, 0, 16) : 0;
      const __m512i v = LoadFirst(x + (left > 0 ? r * stride + d : 0), left);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + d),
                          _mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
    }
  }
}

// r[i] <- column i of the 16 x 16 dwords r[0..15] (row j lane i).
inline void Transpose16(__m512i* r) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4b + e], 128-bit lane L: rows 4b..4b+3 of element 4L + e.
  for (int b = 0; b < 16; b += 4) {
    u[b] = _mm512_unpacklo_epi64(t[b], t[b + 2]);
    u[b + 1] = _mm512_unpackhi_epi64(t[b], t[b + 2]);
    u[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
    u[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xEE);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xEE);
    r[e] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    r[4 + e] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
    r[8 + e] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    r[12 + e] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
  }
}

// K^T as B tiles: tile (g, c) at out + (g * chunks + c) * 256 dwords, row i
// the dimension pair (c * 32 + 2i, + 1) of keys 16g .. 16g + 15 (zeros past
// `keys` and past `dim`, which is even).
void PackKeys(const uint16_t* k, int64_t ks, int keys, int dim, int groups, int chunks,
              uint32_t* out) {
  for (int g = 0; g < groups; ++g) {
    for (int c = 0; c < chunks; ++c) {
      const int left = std::clamp((dim - c * kChunk) / 2, 0, 16);
      __m512i r[16];
      for (int j = 0; j < 16; ++j) {
        const int key = g * kCols + j;
        r[j] = key < keys ? LoadFirst(k + key * ks + c * kChunk, left) : _mm512_setzero_si512();
      }
      Transpose16(r);
      uint32_t* tile = out + (int64_t{g} * chunks + c) * (kRows * kCols);
      for (int i = 0; i < 16; ++i) _mm512_storeu_si512(tile + i * kCols, r[i]);
    }
  }
}

// Writes the valid part (n_rows x n_cols) of a 16 x 16 f32 tile stored at
// `tile` to out (row stride `stride`).
void CopyOut(const float* tile, int n_rows, int n_cols, float* out, int64_t stride) {
  for (int r = 0; r < n_rows; ++r) std::memcpy(out + r * stride, tile + r * kCols, n_cols * 4);
}

// ---- ScoresBf16Tiles ----

// One block of R row tiles x G key groups: rows 16 * rt.., keys 16 * g..
template <int R, int G>
void ScoreBlock(const uint16_t* qa, int qa_width, const uint32_t* kb, int chunks, int rt, int g,
                int rows, int keys, float* s, int64_t ss) {
  _tile_zero(0);
  if constexpr (G == 2) _tile_zero(1);
  if constexpr (R == 2) _tile_zero(2);
  if constexpr (R == 2 && G == 2) _tile_zero(3);
  const int64_t a_stride = int64_t{qa_width} * 2;
  for (int c = 0; c < chunks; ++c) {
    _tile_loadd(4, qa + int64_t{rt} * kRows * qa_width + c * kChunk, a_stride);
    _tile_loadd(6, kb + (int64_t{g} * chunks + c) * (kRows * kCols), 64);
    if constexpr (G == 2) _tile_loadd(7, kb + (int64_t{g + 1} * chunks + c) * (kRows * kCols), 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (G == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (R == 2) {
      _tile_loadd(5, qa + int64_t{rt + 1} * kRows * qa_width + c * kChunk, a_stride);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (G == 2) _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) float scratch[kRows * kCols];
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < G; ++j) {
      const int r0 = 16 * (rt + i), j0 = 16 * (g + j);
      const int n_rows = std::min(kRows, rows - r0), n_cols = std::min(kCols, keys - j0);
      if (n_rows == kRows && n_cols == kCols) {
        StoreC(2 * i + j, s + r0 * ss + j0, ss * 4);
        continue;
      }
      StoreC(2 * i + j, scratch, 64);
      MemoryBarrier();
      CopyOut(scratch, n_rows, n_cols, s + r0 * ss + j0, ss);
    }
  }
}

void ScoresBf16Tiles(int rows, int keys, int dim, const float* q, int64_t qs, const uint16_t* k,
                     int64_t ks, float* s, int64_t ss, const void* prefetch,
                     int64_t prefetch_bytes) {
  if (rows <= 0 || keys <= 0) return;
  if (dim % 2 != 0) {  // no K row of an odd dimension packs into pairs
    kAttnTileRef.scores_bf16_tiles(rows, keys, dim, q, qs, k, ks, s, ss, prefetch, prefetch_bytes);
    return;
  }
  const int chunks = (dim + kChunk - 1) / kChunk, width = chunks * kChunk;
  const int row_tiles = (rows + kRows - 1) / kRows, groups = (keys + kCols - 1) / kCols;
  thread_local std::vector<uint16_t> qa;
  thread_local std::vector<uint32_t> kb;
  qa.resize(static_cast<size_t>(row_tiles) * kRows * width);
  kb.resize(static_cast<size_t>(groups) * chunks * kRows * kCols);
  PackTopHalves(q, qs, rows, dim, row_tiles * kRows, width, qa.data());
  PackKeys(k, ks, keys, dim, groups, chunks, kb.data());
  MemoryBarrier();
  _tile_loadconfig(&kConfig);
  for (int rt = 0; rt < row_tiles; rt += 2) {
    const bool two_rows = rt + 1 < row_tiles;
    for (int g = 0; g < groups; g += 2) {
      const bool two_groups = g + 1 < groups;
      if (two_rows && two_groups) {
        ScoreBlock<2, 2>(qa.data(), width, kb.data(), chunks, rt, g, rows, keys, s, ss);
      } else if (two_rows) {
        ScoreBlock<2, 1>(qa.data(), width, kb.data(), chunks, rt, g, rows, keys, s, ss);
      } else if (two_groups) {
        ScoreBlock<1, 2>(qa.data(), width, kb.data(), chunks, rt, g, rows, keys, s, ss);
      } else {
        ScoreBlock<1, 1>(qa.data(), width, kb.data(), chunks, rt, g, rows, keys, s, ss);
      }
    }
  }
  _tile_release();
  MemoryBarrier();
}

// ---- AccumulateBf16Tiles ----

// C tiles of O: straight from o where the 16 rows are all real, else
// through a scratch tile holding the real rows (zeros below them).
struct OTile {
  float* o;
  int64_t os;
  int n_rows;
  alignas(64) float scratch[kRows * kCols];
  float* Where() { return n_rows == kRows ? o : scratch; }
  int64_t Stride() const { return n_rows == kRows ? os * 4 : 64; }
  void Prepare() {
    if (n_rows == kRows) return;
    std::memset(scratch, 0, sizeof(scratch));
    for (int r = 0; r < n_rows; ++r) std::memcpy(scratch + r * kCols, o + r * os, 64);
  }
  void Finish() {
    if (n_rows == kRows) return;
    for (int r = 0; r < n_rows; ++r) std::memcpy(o + r * os, scratch + r * kCols, 64);
  }
};

// One block of R row tiles x G column groups of O, every chunk of keys.
// pa: P's packed rows (pa_width halves apart); b(c, col): chunk c's B
// tile for output columns col.., and its row stride in bytes.
template <int R, int G, class B>
void AccumulateBlock(const uint16_t* pa, int pa_width, int chunks, int rt, int col, int rows,
                     float* o, int64_t os, B b) {
  OTile t[4];
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < G; ++j) {
      const int r0 = 16 * (rt + i);
      t[2 * i + j] = {o + r0 * os + col + 16 * j, os, std::min(kRows, rows - r0), {}};
      t[2 * i + j].Prepare();
    }
  }
  MemoryBarrier();
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < G; ++j) LoadC(2 * i + j, t[2 * i + j].Where(), t[2 * i + j].Stride());
  }
  const int64_t a_stride = int64_t{pa_width} * 2;
  for (int c = 0; c < chunks; ++c) {
    const auto [b0, b_stride] = b(c, col);
    _tile_loadd(4, pa + int64_t{rt} * kRows * pa_width + c * kChunk, a_stride);
    _tile_loadd(6, b0, b_stride);
    if constexpr (G == 2) _tile_loadd(7, b0 + kCols, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (G == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (R == 2) {
      _tile_loadd(5, pa + int64_t{rt + 1} * kRows * pa_width + c * kChunk, a_stride);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (G == 2) _tile_dpbf16ps(3, 5, 7);
    }
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < G; ++j) StoreC(2 * i + j, t[2 * i + j].Where(), t[2 * i + j].Stride());
  }
  MemoryBarrier();
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < G; ++j) t[2 * i + j].Finish();
  }
}

void AccumulateBf16Tiles(int rows, int keys, int dim, const float* p, int64_t ps,
                         const uint32_t* vp, float* o, int64_t os) {
  if (rows <= 0 || keys <= 0) return;
  if (dim % kCols != 0) {  // column groups are whole tiles
    kAttnTileRef.accumulate_bf16_tiles(rows, keys, dim, p, ps, vp, o, os);
    return;
  }
  const int chunks = (keys + kChunk - 1) / kChunk, width = chunks * kChunk;
  const int pairs = (keys + 1) / 2, whole_chunks = pairs / kRows;
  const int row_tiles = (rows + kRows - 1) / kRows, groups = dim / kCols;
  thread_local std::vector<uint16_t> pa;
  thread_local std::vector<uint32_t> last;  // a partial last chunk of pairs, zero-padded
  pa.resize(static_cast<size_t>(row_tiles) * kRows * width);
  PackTopHalves(p, ps, rows, keys, row_tiles * kRows, width, pa.data());
  if (whole_chunks < chunks) {
    last.assign(static_cast<size_t>(kRows) * dim, 0u);
    const int n = pairs - whole_chunks * kRows;
    std::memcpy(last.data(), vp + int64_t{whole_chunks} * kRows * dim,
                static_cast<size_t>(n) * dim * 4);
  }
  const auto b = [&](int c, int col) -> std::pair<const uint32_t*, int64_t> {
    if (c < whole_chunks) return {vp + int64_t{c} * kRows * dim + col, int64_t{dim} * 4};
    return {last.data() + col, int64_t{dim} * 4};
  };
  MemoryBarrier();
  _tile_loadconfig(&kConfig);
  for (int rt = 0; rt < row_tiles; rt += 2) {
    const bool two_rows = rt + 1 < row_tiles;
    for (int g = 0; g < groups; g += 2) {
      const bool two_groups = g + 1 < groups;
      const int col = g * kCols;
      if (two_rows && two_groups) {
        AccumulateBlock<2, 2>(pa.data(), width, chunks, rt, col, rows, o, os, b);
      } else if (two_rows) {
        AccumulateBlock<2, 1>(pa.data(), width, chunks, rt, col, rows, o, os, b);
      } else if (two_groups) {
        AccumulateBlock<1, 2>(pa.data(), width, chunks, rt, col, rows, o, os, b);
      } else {
        AccumulateBlock<1, 1>(pa.data(), width, chunks, rt, col, rows, o, os, b);
      }
    }
  }
  _tile_release();
  MemoryBarrier();
}

}  // namespace

void UseAmxAttnTile(AttnTileKernels* k) {
  k->scores_bf16_tiles = ScoresBf16Tiles;
  k->accumulate_bf16_tiles = AccumulateBf16Tiles;
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // not built for AMX-BF16

namespace ellm::kernels::internal {
void UseAmxAttnTile(AttnTileKernels*) {}
}  // namespace ellm::kernels::internal

#endif

// Matrix products against weights repacked once, at load, for integer SIMD
// (prefill's hot loop, and decode's). Groups of 8 weight rows are
// interleaved so that one 32-byte vector holds 4 consecutive quants of each
// of the 8 rows: a broadcast of 4 activation bytes times that vector
// (VPMADDUBSW, VPMADDWD) yields the partial sums of 8 rows in 8 lanes, with
// no horizontal sums; per block the 8 row scales multiply 8 lanes at once.
// The scheme is ggml-cpu's "repack" (q4_0_8x8, q4_K_8x8); the code is ours.
//
// Wide layouts, the ones the kernels read (a group is 8 rows; rows past the
// matrix's end are zero, scale 0, so they add nothing). In every layout a
// "chunk" is 32 bytes: [row 0: 4 quants][row 1: 4 quants]...[row 7: 4
// quants], the quants of elements 4c .. 4c+3 of its block, one per byte.
//
//   Q8_0, Q5_0, Q4_0 (blocks of 32, nb = cols / 32 per row):
//     d: nb x 8 f16 (block b, row r at 8b + r), padded to a multiple of 64
//        bytes; then q: nb blocks x 8 chunks. Quant bytes: Q8_0 signed as
//        stored; Q5_0 unsigned 5-bit q (value d * (q - 16)); Q4_0 unsigned
//        4-bit q (value d * (q - 8)).
//   Q5_1, Q4_1 (blocks of 32): as Q5_0 / Q4_0, with a table of the f16
//     mins m, laid out as the d table, between the d table and q; q as
//     stored (value d * q + m).
//   Q4_K (super-blocks of 256): per super-block 1184 bytes:
//     d[8] f16, dmin[8] f16; sc: 8 groups x 8 rows u8 (the 6-bit scales;
//     kernels double each into an i16 pair for VPMADDWD); m: likewise for
//     the mins; q: 4 pairs x 8 chunks, byte = element 64p + 4c + i in the
//     low nibble, element 64p + 32 + 4c + i in the high one (as Q4_K pairs
//     them). Stored as read: 3% larger than Q4_K.
//   Q5_K (super-blocks of 256): per super-block 1440 bytes: Q4_K's 1184
//     (its d, dmin, sc, m and nibble pairs, the low 4 bits of q), then 8
//     vectors of 32 bytes, one per 32-element group g, of fifth bits (bit c
//     of byte i: the fifth bit of chunk c's byte i, as Q5_0's stored
//     vector). Stored as read: 2% larger than Q5_K.
//   Q6_K (super-blocks of 256): per super-block 2208 bytes:
//     d[8] f16, 16 bytes of padding; sc: 8 pairs x 8 rows x 2 i8 (the scales
//     of 16-element groups 2p and 2p + 1); q: 64 chunks of unsigned 6-bit q
//     (value d * sc * (q - 32)).
//   Q2_K (super-blocks of 256): per super-block 2208 bytes: d[8] f16,
//     dmin[8] f16; sc: 8 pairs x 8 rows x 2 bytes, GGUF's scale bytes of
//     16-element groups 2p and 2p + 1 (sc in the low nibble, m in the high
//     one); q: 64 chunks of 2-bit q (value d * sc * q - dmin * m).
//   Q3_K (super-blocks of 256): Q6_K's, the quant bytes the unsigned 3-bit
//     u = q + 4 (value d * sc * (u - 4)).
//   IQ4_NL (blocks of 32): Q8_0's, the quant bytes the signed values
//     kIq4NlValues[q] of the 4-bit indices (value d * byte).
//   IQ4_XS (super-blocks of 256): per super-block 2144 bytes: d[8] f16, 16
//     bytes of padding; sc: 8 groups x 8 rows i8 (ls - 32); q: 8 groups x 8
//     chunks of the signed values kIq4NlValues[q] (value d * sc * byte).
//
// Stored layouts, what PackGroup writes and memory holds: the wide ones
// with the spare bits squeezed out, so a stored group is within 3% of its
// rows in the file (the wide Q5_0 is 55% larger, Q6_K 31%) and decode,
// which streams every weight once per token, reads no more bytes than
// llama.cpp does. With more tokens than a register tile, the reference and
// AVX2 kernels expand one group at a time into a per-thread buffer (an
// L1/L2 round trip, a few instructions per 32 bytes), once per 64 tokens;
// the AVX-512 kernels copy each pair of groups' quants, once per 64 tokens,
// into one ready for VPDPBUSD (gemm_packed_avx512.cc), which the AMX
// kernels read as int8 tiles for 16 tokens or more (gemm_packed_amx.cc).
//   Q8_0, Q4_K, Q5_K: the wide layout.
//   Q5_0, Q4_0, IQ4_NL (Q5_1, Q4_1: the d and m tables): the scale
//     tables as wide; then per block 4 nibble vectors of 32
//     bytes (vector k: chunk k's quants in the low nibbles, chunk k + 4's in
//     the high ones; IQ4_NL's hold the table indices) and, for Q5_0, one
//     vector of fifth bits (bit c of byte i: the fifth bit of chunk c's
//     byte i): 160 / 128 bytes per block.
//   IQ4_XS: per super-block 1120 bytes: d, padding, sc as wide (96 bytes);
//     then per 32-element group the 4 nibble vectors of its table indices,
//     as an IQ4_NL block (128 bytes).
//   Q6_K: per super-block 1696 bytes: d, padding, sc as wide (160 bytes);
//     then per 16-element group g (chunks 4g .. 4g + 3) 96 bytes: a nibble
//     vector of chunks 4g (low) and 4g + 1 (high), one of 4g + 2 and 4g + 3,
//     and one of high bit pairs (bits 2j+1:2j of byte i = bits 5:4 of chunk
//     4g + j's byte i).
//   Q2_K: per super-block 672 bytes (as the file's): d, dmin, sc as wide
//     (160 bytes), then per 16-element group g a vector of 2-bit q (bits
//     2j + 1:2j of byte i: chunk 4g + j's byte i).
//   Q3_K: per super-block 896 bytes: d[8] f16; the 6-bit scales sc + 32 of
//     pair p of 16-element groups (value j = 2r + k: row r, group 2p + k)
//     as 8 bytes of low nibbles (byte r: j = 2r low, 2r + 1 high) at 16 +
//     8p and 4 bytes of high bit pairs (bits 2(j % 4) + 1:2(j % 4) of byte
//     j / 4) at 80 + 4p; 16 bytes of padding; at 128 per 16-element group g
//     a vector of 2-bit lows (bits 2j + 1:2j of byte i: chunk 4g + j's byte
//     i); at 640 per 32-element group v a vector of third bits (bit c of
//     byte i: chunk 8v + c's byte i). 2% larger than Q3_K.
// A call with at most one register tile of tokens (decode) has the AVX2 and
// AVX-512 kernels unpack the stored groups in registers instead, and
// prefetch the next group (or pair) into L2 as they go: decode streams the
// matrix from DRAM once, and without the prefetches a core kept half the
// bytes in flight that it can (gemm_packed_isa.h, GroupPrefetch).
//
// Activations are the rows quant::QuantizeRow writes in
// quant::ActivationTypeFor(type) (Q8_0, Q8_1 or Q8_K, quants in [-127,
// 127]); for Q8_0 the caller also supplies each block's scale as f32 and the
// sum of its quants (SummarizeQ8_0), which the offset formats need; for Q8_1
// (Q4_1, Q5_1) each block's d and s as f32 (SummarizeQ8_1).
//
// Numerics: integer sums inside a block (Q8_0 family) or super-block
// (K-quants) are exact, as in vec_dot. Every level then repeats
// vec_dot_ref.cc's float operations in its order (the same products of
// scales, one sequential sum over blocks, no fused multiply-adds), so each
// output equals RefVecDot of the unpacked row bit for bit. The row-wise
// AVX2 vec_dot kernels sum in 8 lanes first and fuse, so against them (and
// so between MatMul with and without packed weights) results differ by a
// few f32 ulps of sum |w_i * a_i|: within 1e-5 of that sum, the vec_dot
// tests' bound.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/tensor_type.h"

namespace ellm::kernels {

inline constexpr int kPackRows = 8;       // rows per interleaved group
inline constexpr size_t kPackAlign = 64;  // alignment the packed buffer must have

// True when `type` has a packed layout: Q8_0, Q5_0, Q4_0, Q5_1, Q4_1, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS.
bool CanPack(quant::TensorType type);

// Bytes of one stored packed group of rows of `cols` elements (a multiple of 32).
// REQUIRES: CanPack(type); cols % Traits(type).block_elems == 0.
size_t PackedGroupBytes(quant::TensorType type, int64_t cols);

// A packed matrix: ceil(rows / 8) groups of group_bytes each, group g at
// data + g * group_bytes. The memory belongs to the caller and must be
// aligned to kPackAlign.
struct PackedMatrix {
  quant::TensorType type = quant::TensorType::kF32;  // the source weight type
  int64_t rows = 0;
  int64_t cols = 0;
  size_t group_bytes = 0;
  const uint8_t* data = nullptr;

  int64_t groups() const { return (rows + kPackRows - 1) / kPackRows; }
  const uint8_t* Group(int64_t g) const { return data + static_cast<size_t>(g) * group_bytes; }
};

// Packs rows [0, n_rows) of `src` (row r at src + r * row_bytes, `cols`
// elements in `type` as stored in GGUF) into one group at dst
// (PackedGroupBytes(type, cols) bytes; rows n_rows..7 become zero).
// REQUIRES: CanPack(type); 1 <= n_rows <= 8; dst does not overlap src.
// Thread-safe for distinct dst.
void PackGroup(quant::TensorType type, const uint8_t* src, size_t row_bytes, int n_rows,
               int64_t cols, uint8_t* dst);

// Writes row `row` of `m` to dst as GGUF stores it (quant::RowBytes of
// m.type and m.cols): the exact bytes PackGroup read (packing only moves
// bytes and bits, K-quant scales included). For lookups in a tied embedding
// matrix whose file pages were released once it was packed.
// REQUIRES: 0 <= row < m.rows. Thread-safe.
void UnpackRow(const PackedMatrix& m, int64_t row, uint8_t* dst);

// The activation rows of one product.
struct GemmActivations {
  const uint8_t* rows = nullptr;  // row t at rows + t * stride
  size_t stride = 0;
  int64_t n_tokens = 0;
  // Q8_0 activations only: [n_tokens, cols / 32], the f32 value of each
  // block's f16 d and the sum of its 32 quants (SummarizeQ8_0).
  // Q8_1 activations: block_d as for Q8_0, and block_s [n_tokens, cols /
  // 32], the f32 value of each block's f16 s (SummarizeQ8_1).
  const float* block_d = nullptr;
  const int32_t* block_sum = nullptr;
  const float* block_s = nullptr;
  // Unique to this encoding of the activations (NewActivationsId), or 0.
  // The calls of one product (a pool chunk each) share it, so a kernel may
  // keep what it derives from the activations per thread across them.
  uint64_t id = 0;
};
// A fresh GemmActivations::id (never 0).
uint64_t NewActivationsId();

// Fills block_d and block_sum for Q8_0 activation rows (each [n_tokens,
// cols / 32]). REQUIRES: cols % 32 == 0.
void SummarizeQ8_0(const uint8_t* rows, size_t stride, int64_t n_tokens, int64_t cols,
                   float* block_d, int32_t* block_sum);
// Fills block_d and block_s for Q8_1 activation rows (each [n_tokens, cols
// / 32]). REQUIRES: cols % 32 == 0.
void SummarizeQ8_1(const uint8_t* rows, size_t stride, int64_t n_tokens, int64_t cols,
                   float* block_d, float* block_s);

// y[t * y_stride + (r - row_begin)] = dot(weight row r, activation row t)
// for row_begin <= r < row_end, t < a.n_tokens. Any row range works; ranges
// aligned to 8 rows avoid a copy. y must not alias the weights or the
// activations. Thread-safe; allocates only this thread's expansion buffer,
// the first time the thread meets a wider group than before.
using GemmPackedFn = void (*)(const PackedMatrix& w, int64_t row_begin, int64_t row_end,
                              const GemmActivations& a, float* y, int64_t y_stride);

// The fastest kernel for `type` that HostCpu().Level() allows, chosen once
// from a table filled at start-up; nullptr if the type cannot be packed.
GemmPackedFn GetGemmPacked(quant::TensorType type);
// The kernel at an explicit level (tests compare each with kScalar); falls
// back to the next lower level that has one.
GemmPackedFn GetGemmPackedAt(quant::TensorType type, IsaLevel level);

}  // namespace ellm::kernels

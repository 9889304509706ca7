// Internal to the packed GEMM kernels: what each instruction-set file offers,
// and the layout constants the packer and every kernel share. gemm_packed.cc
// builds the dispatch table from these; nothing else calls them.
#pragma once

#include <algorithm>

#include "kernels/gemm_packed.h"

namespace ellm::kernels::internal {

// Q8_0 family: bytes of the scale table in front of the quants.
inline size_t PackedScaleBytes32(int64_t nb) {
  const size_t raw = static_cast<size_t>(nb) * kPackRows * 2;
  return (raw + kPackAlign - 1) / kPackAlign * kPackAlign;
}

// Q4_1, Q5_1: a second table, of the f16 mins m, follows the d table (at
// PackedScaleBytes32(nb), laid out as it), before the quants.
inline bool HasMins32(quant::TensorType type) {
  return type == quant::TensorType::kQ4_1 || type == quant::TensorType::kQ5_1;
}
// Q8_0 family: bytes in front of a group's quants (the scale tables).
inline size_t QuantBase32(quant::TensorType type, int64_t nb) {
  return PackedScaleBytes32(nb) * (HasMins32(type) ? 2 : 1);
}

// ---- The wide layouts the kernels read (one quant per byte; gemm_packed.h
// has them in full). Q8_0's stored layout is its wide one. ----
inline constexpr size_t kPackedBlock32QuantBytes = 32 * kPackRows;  // 8 chunks
// Q4_K super-block (stored as read): offsets inside one 1184-byte super-block.
inline constexpr size_t kQ4KPackedD = 0, kQ4KPackedDmin = 16, kQ4KPackedSc = 32, kQ4KPackedM = 96,
                        kQ4KPackedQ = 160, kQ4KPackedBytes = 1184;
// Q5_K super-block (stored as read): Q4_K's 1184 bytes at the same offsets,
// then 8 vectors of fifth bits (one per 32-element group), 1440 bytes.
inline constexpr size_t kQ5KPackedH = 1184, kQ5KPackedBytes = 1440;
// Q6_K super-block: offsets inside one 2208-byte wide super-block.
inline constexpr size_t kQ6KPackedD = 0, kQ6KPackedSc = 32, kQ6KPackedQ = 160,
                        kQ6KPackedBytes = 2208;

// IQ4_XS super-block: offsets inside one 2144-byte wide super-block (header
// 96 bytes, then 8 groups of 8 chunks of looked-up signed values).
inline constexpr size_t kIq4XsPackedD = 0, kIq4XsPackedSc = 32, kIq4XsPackedQ = 96,
                        kIq4XsPackedBytes = 2144;

// ---- The stored (compact) layouts PackGroup writes (gemm_packed.h). ----
// Q5_0 / Q4_0: a block's quants after the scale table: 4 nibble vectors
// (32 bytes each) and, for Q5_0, a vector of fifth bits.
inline constexpr size_t kStoredBlockQ5_0 = 160, kStoredBlockQ4_0 = 128;
// Q6_K: d, padding and scales as in the wide layout, then per 16-element
// group two nibble vectors and one vector of high bit pairs.
inline constexpr size_t kQ6KStoredGroups = 160, kQ6KStoredGroupBytes = 96, kQ6KStoredBytes = 1696;

// Q3_K: the wide layout is Q6_K's, its quants u = q + 4 in [0, 7]. Stored,
// per super-block: d, then the scales' low nibbles (8 bytes per pair of
// 16-element groups) and high bit pairs (4 bytes per pair), padding, 16
// vectors of 2-bit lows (one per 16-element group) and 8 of third bits (one
// per 32-element group).
inline constexpr size_t kQ3KStoredScLow = 16, kQ3KStoredScHigh = 80, kQ3KStoredLow = 128,
                        kQ3KStoredHigh = 640, kQ3KStoredBytes = 896;

// Q2_K super-block: wide 2208 bytes (d, dmin, the scale bytes, 64 chunks of
// 2-bit q one per byte); stored 672 (the same 160-byte header, then per
// 16-element group a vector of 2-bit lows, as Q3_K's).
inline constexpr size_t kQ2KPackedD = 0, kQ2KPackedDmin = 16, kQ2KPackedSc = 32, kQ2KPackedQ = 160,
                        kQ2KPackedBytes = 2208, kQ2KStoredBytes = 672;

// IQ4_NL's stored blocks are Q4_0's (kStoredBlockQ4_0). IQ4_XS: the header
// as wide, then per 32-element group 4 nibble vectors (as a Q4_0 block).
inline constexpr size_t kIq4XsStoredGroupBytes = 128, kIq4XsStoredBytes = 1120;

// Decode streams each matrix once, from DRAM, and the out-of-order window
// alone does not keep enough of it in flight. A kernel reading the matrix's
// own stored groups therefore prefetches, while on block (or super-block) i
// of n of a group, slice i of the group `ahead` groups on into L2, so that
// group arrives while this one is worked through. The slices are whole cache
// lines, worked out once per group (not two divisions per block, which cost
// a fifth of a small in-cache product). Addresses past the matrix's end are
// only prefetched, never read.
class GroupPrefetch {
 public:
  GroupPrefetch(const PackedMatrix& w, int ahead, int64_t n)
      : ahead_bytes_(static_cast<size_t>(ahead) * w.group_bytes),
        group_bytes_(w.group_bytes),
        slice_((w.group_bytes + static_cast<size_t>(n) * 64 - 1) / (static_cast<size_t>(n) * 64) *
               64) {}
  // Slice i of the group `ahead` groups on from `group`.
  void operator()(const uint8_t* group, int64_t i) const {
    const uintptr_t next = reinterpret_cast<uintptr_t>(group) + ahead_bytes_;
    const size_t begin = static_cast<size_t>(i) * slice_;
    const size_t end = std::min(begin + slice_, group_bytes_);
    for (size_t off = begin; off < end; off += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(next + off), 0, 2);
    }
  }

 private:
  size_t ahead_bytes_, group_bytes_, slice_;
};

// A buffer for one thread's copies of weight groups (declare it
// thread_local): grows to the largest request, never shrinks, freed with the
// thread; kPackAlign-aligned.
class ThreadBuffer {
 public:
  ThreadBuffer() = default;
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;
  ~ThreadBuffer();
  uint8_t* Get(size_t n);  // at least n bytes; contents undefined

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

// Bytes of one wide group of `cols` elements.
size_t WideGroupBytes(quant::TensorType type, int64_t cols);
// True when the stored layout of `type` differs from its wide one.
bool IsCompact(quant::TensorType type);

// Writes the wide layout of one stored group of `cols` elements to `wide`
// (WideGroupBytes bytes, 32-byte aligned). REQUIRES: IsCompact(type).
using ExpandFn = void (*)(quant::TensorType type, const uint8_t* stored, int64_t cols,
                          uint8_t* wide);
void RefExpandGroup(quant::TensorType type, const uint8_t* stored, int64_t cols,
                    uint8_t* wide);  // gemm_packed_ref.cc: the truth
void Avx2ExpandGroup(quant::TensorType type, const uint8_t* stored, int64_t cols,
                     uint8_t* wide);  // gemm_packed_avx2.cc

// What a kernel reads for group g of `w`: the stored group itself when the
// layouts coincide, else its wide copy, expanded into a buffer of this
// thread's that holds two (slot 0 and slot 1; a slot's copy lasts until the
// next Get on that slot). Allocates that buffer once per thread and size.
// A null `expand` gives the stored groups (for kernels that unpack them).
class WideGroups {
 public:
  WideGroups(const PackedMatrix& w, ExpandFn expand);
  const uint8_t* Get(int64_t g, int slot);

 private:
  const PackedMatrix& w_;
  ExpandFn expand_;
  size_t slot_bytes_ = 0;
  uint8_t* buffer_ = nullptr;  // null when the layouts coincide
};

GemmPackedFn RefGemmPacked(quant::TensorType type);   // gemm_packed_ref.cc
GemmPackedFn Avx2GemmPacked(quant::TensorType type);  // gemm_packed_avx2.cc
// gemm_packed_avx512.cc; null when the compiler could not build it.
GemmPackedFn Avx512VnniGemmPacked(quant::TensorType type);
// IQ4_XS's kernel at that level (gemm_packed_iq4_avx512.cc), for
// Avx512VnniGemmPacked's table.
GemmPackedFn Avx512VnniGemmPackedIq4Xs();
// Q3_K's (gemm_packed_q3_k_avx512.cc) and Q2_K's (gemm_packed_q2_k_avx512.cc),
// likewise.
GemmPackedFn Avx512VnniGemmPackedQ3_K();
GemmPackedFn Avx512VnniGemmPackedQ2_K();
// The products of 2 to 16 tokens (batched decode) at that level
// (gemm_packed_duo_avx512.cc), for Avx512VnniGemmPacked's kernels of Q8_0,
// Q5_0, Q4_0, IQ4_NL, Q4_K, Q5_K and Q6_K; null for other types.
// REQUIRES: 2 <= a.n_tokens <= 16.
GemmPackedFn Avx512VnniGemmPackedDuo(quant::TensorType type);
// gemm_packed_amx.cc: AMX int8 tiles for prefill (at least kAmxMinTokens
// tokens), the VNNI kernel below that; null for the types it does not cover
// (Q2_K, Q3_K, IQ4_XS) or when the compiler could not build it.
GemmPackedFn AmxGemmPacked(quant::TensorType type);
inline constexpr int64_t kAmxMinTokens = 16;

}  // namespace ellm::kernels::internal

// The packed layouts (gemm_packed.h) written from GGUF blocks, the Q8_0
// activation summary, and the dispatch table for the GEMM kernels (indexed by
// ISA level and weight type, filled once on first use).
#include "kernels/gemm_packed.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/gemm_packed_isa.h"
#include "quant/fp16.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

namespace ellm::kernels {

uint64_t NewActivationsId() {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace {

using namespace ellm::quant;  // NOLINT(build/namespaces): block types
using internal::kPackedBlock32QuantBytes;

// Byte offset of (chunk c, row r, byte i) inside a run of chunks.
inline size_t ChunkByte(int64_t c, int r, int i) {
  return static_cast<size_t>(c) * 32 + static_cast<size_t>(4 * r + i);
}

// The 5-bit quants of a Q5_0 / Q5_1 block, and the 4-bit ones of a Q4_0 /
// Q4_1 / IQ4_NL block, as the packed layout stores them; and the inverses.
template <typename Block>
void Quants5(const Block* x, uint8_t q[32]) {
  uint32_t qh;
  std::memcpy(&qh, x->qh, sizeof(qh));
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<uint8_t>((x->qs[j] & 0x0f) | (((qh >> j) & 1u) << 4));
    q[j + 16] = static_cast<uint8_t>((x->qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  }
}
template <typename Block>
void Quants4(const Block* x, uint8_t q[32]) {
  for (int j = 0; j < 16; ++j) {
    q[j] = x->qs[j] & 0x0f;
    q[j + 16] = x->qs[j] >> 4;
  }
}
template <typename Block>
void StoreQuants5(const uint8_t q[32], Block* x) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    x->qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
  }
  std::memcpy(x->qh, &qh, sizeof(qh));
}
template <typename Block>
void StoreQuants4(const uint8_t q[32], Block* x) {
  for (int j = 0; j < 16; ++j) x->qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

// The 32 quants of one block of a 32-element format as the packed layout
// stores them (see gemm_packed.h).
void Block32Quants(TensorType type, const uint8_t* block, uint8_t q[32]) {
  switch (type) {
    case TensorType::kQ8_0:
      std::memcpy(q, reinterpret_cast<const BlockQ8_0*>(block)->qs, 32);
      return;
    case TensorType::kQ5_0:
      return Quants5(reinterpret_cast<const BlockQ5_0*>(block), q);
    case TensorType::kQ5_1:
      return Quants5(reinterpret_cast<const BlockQ5_1*>(block), q);
    case TensorType::kQ4_0:
    case TensorType::kIQ4_NL:  // IQ4_NL: the table indices (Q4_0's bytes)
      static_assert(sizeof(BlockQ4_0) == sizeof(BlockIq4Nl));
      return Quants4(reinterpret_cast<const BlockQ4_0*>(block), q);
    case TensorType::kQ4_1:
      return Quants4(reinterpret_cast<const BlockQ4_1*>(block), q);
    default:
      std::abort();
  }
}

// The inverse of Block32Quants: the stored block's quant bytes from the 32
// packed quants (its f16 d is written by the caller).
void StoreBlock32Quants(TensorType type, const uint8_t q[32], uint8_t* block) {
  switch (type) {
    case TensorType::kQ8_0:
      std::memcpy(reinterpret_cast<BlockQ8_0*>(block)->qs, q, 32);
      return;
    case TensorType::kQ5_0:
      return StoreQuants5(q, reinterpret_cast<BlockQ5_0*>(block));
    case TensorType::kQ5_1:
      return StoreQuants5(q, reinterpret_cast<BlockQ5_1*>(block));
    case TensorType::kQ4_0:
    case TensorType::kIQ4_NL:
      return StoreQuants4(q, reinterpret_cast<BlockQ4_0*>(block));
    case TensorType::kQ4_1:
      return StoreQuants4(q, reinterpret_cast<BlockQ4_1*>(block));
    default:
      std::abort();
  }
}

void PackGroup32(TensorType type, const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols,
                 uint8_t* dst) {
  const int64_t nb = cols / 32;
  const uint32_t block_bytes = Traits(type).block_bytes;
  uint8_t* d = dst;
  uint8_t* m = dst + internal::PackedScaleBytes32(nb);  // Q4_1, Q5_1
  uint8_t* qs = dst + internal::QuantBase32(type, nb);
  const bool mins = internal::HasMins32(type);
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* block = src + r * row_bytes + b * block_bytes;
      std::memcpy(d + 2 * (kPackRows * b + r), block, 2);  // every format here starts with f16 d
      if (mins) std::memcpy(m + 2 * (kPackRows * b + r), block + 2, 2);  // then Q4_1's f16 m
      uint8_t q[32];
      Block32Quants(type, block, q);
      uint8_t* out = qs + b * kPackedBlock32QuantBytes;
      for (int e = 0; e < 32; ++e) out[ChunkByte(e / 4, r, e % 4)] = q[e];
    }
  }
}

// Q4_K and Q5_K (kFive): Q4_K's super-block, and for Q5_K the fifth bits
// after it, bit c of byte i of group g's vector the fifth bit of chunk c's
// byte i (Q5_0's fifth-bit vector, per 32-element group).
template <typename Block, bool kFive>
void PackGroupK4(const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols, uint8_t* dst) {
  const size_t sb_bytes = kFive ? internal::kQ5KPackedBytes : internal::kQ4KPackedBytes;
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t s = 0; s < cols / kQkK; ++s) {
      const auto* x = reinterpret_cast<const Block*>(src + r * row_bytes) + s;
      uint8_t* out = dst + s * sb_bytes;
      std::memcpy(out + internal::kQ4KPackedD + 2 * r, &x->d, 2);
      std::memcpy(out + internal::kQ4KPackedDmin + 2 * r, &x->dmin, 2);
      uint8_t sc[8], m[8];
      UnpackK4Scales(x->scales, sc, m);
      for (int g = 0; g < 8; ++g) {
        out[internal::kQ4KPackedSc + 8 * g + r] = sc[g];
        out[internal::kQ4KPackedM + 8 * g + r] = m[g];
      }
      // Q4_K already pairs element 64p + l (low nibble) with 64p + 32 + l
      // (high nibble) in qs[32p + l]: the bytes move, the nibbles stay.
      uint8_t* q = out + internal::kQ4KPackedQ;
      for (int p = 0; p < 4; ++p) {
        for (int l = 0; l < 32; ++l) q[256 * p + ChunkByte(l / 4, r, l % 4)] = x->qs[32 * p + l];
      }
      if constexpr (kFive) {
        uint8_t* h = out + internal::kQ5KPackedH;
        for (int g = 0; g < 8; ++g) {
          for (int l = 0; l < 32; ++l) {
            const int bit = (x->qh[l] >> g) & 1;
            h[32 * g + 4 * r + l % 4] |= static_cast<uint8_t>(bit << (l / 4));
          }
        }
      }
    }
  }
}

void PackGroupQ6_K(const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols, uint8_t* dst) {
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t s = 0; s < cols / kQkK; ++s) {
      const auto* x = reinterpret_cast<const BlockQ6_K*>(src + r * row_bytes) + s;
      uint8_t* out = dst + s * internal::kQ6KPackedBytes;
      std::memcpy(out + internal::kQ6KPackedD + 2 * r, &x->d, 2);
      for (int p = 0; p < 8; ++p) {
        for (int k = 0; k < 2; ++k) {
          out[internal::kQ6KPackedSc + 16 * p + 2 * r + k] =
              static_cast<uint8_t>(x->scales[2 * p + k]);
        }
      }
      uint8_t* q = out + internal::kQ6KPackedQ;
      for (int e = 0; e < kQkK; ++e) {
        const int h = e / 128, k = (e / 32) % 4, l = e % 32;
        const int low = (x->ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
        const int high = (x->qh[32 * h + l] >> (2 * k)) & 3;
        q[ChunkByte(e / 4, r, e % 4)] = static_cast<uint8_t>(low | (high << 4));
      }
    }
  }
}

// Q2_K: the scale bytes as GGUF has them, one 2-bit q per byte.
void PackGroupQ2_K(const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols, uint8_t* dst) {
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t s = 0; s < cols / kQkK; ++s) {
      const auto* x = reinterpret_cast<const BlockQ2_K*>(src + r * row_bytes) + s;
      uint8_t* out = dst + s * internal::kQ2KPackedBytes;
      std::memcpy(out + internal::kQ2KPackedD + 2 * r, &x->d, 2);
      std::memcpy(out + internal::kQ2KPackedDmin + 2 * r, &x->dmin, 2);
      for (int g = 0; g < 16; ++g) {
        out[internal::kQ2KPackedSc + 16 * (g / 2) + 2 * r + g % 2] = x->scales[g];
      }
      uint8_t* q = out + internal::kQ2KPackedQ;
      for (int e = 0; e < kQkK; ++e) {
        const int h = e / 128, j = (e / 32) % 4, l = e % 32;
        q[ChunkByte(e / 4, r, e % 4)] = static_cast<uint8_t>((x->qs[32 * h + l] >> (2 * j)) & 3);
      }
    }
  }
}

// Q3_K: Q6_K's wide layout with u = q + 4 (the 2-bit low part and the hmask
// bit, which is set when q is not lowered by 4) and the scales sc - 32.
void PackGroupQ3_K(const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols, uint8_t* dst) {
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t s = 0; s < cols / kQkK; ++s) {
      const auto* x = reinterpret_cast<const BlockQ3_K*>(src + r * row_bytes) + s;
      uint8_t* out = dst + s * internal::kQ6KPackedBytes;
      std::memcpy(out + internal::kQ6KPackedD + 2 * r, &x->d, 2);
      int8_t sc[16];
      UnpackQ3_KScales(x->scales, sc);
      for (int g = 0; g < 16; ++g) {
        out[internal::kQ6KPackedSc + 16 * (g / 2) + 2 * r + g % 2] = static_cast<uint8_t>(sc[g]);
      }
      uint8_t* q = out + internal::kQ6KPackedQ;
      for (int e = 0; e < kQkK; ++e) {
        const int h = e / 128, j = (e / 32) % 4, l = e % 32;
        const int low = (x->qs[32 * h + l] >> (2 * j)) & 3;
        const int high = (x->hmask[l] >> (4 * h + j)) & 1;
        q[ChunkByte(e / 4, r, e % 4)] = static_cast<uint8_t>(low | (high << 2));
      }
    }
  }
}

// IQ4_XS: the header as the wide layout's, and the table indices where the
// wide layout has their values (CompactIq4Xs packs those nibbles).
void PackGroupIq4Xs(const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols, uint8_t* dst) {
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t s = 0; s < cols / kQkK; ++s) {
      const auto* x = reinterpret_cast<const BlockIq4Xs*>(src + r * row_bytes) + s;
      uint8_t* out = dst + s * internal::kIq4XsPackedBytes;
      std::memcpy(out + internal::kIq4XsPackedD + 2 * r, &x->d, 2);
      for (int g = 0; g < 8; ++g) {
        out[internal::kIq4XsPackedSc + 8 * g + r] = static_cast<uint8_t>(Iq4XsScale(*x, g));
        uint8_t* q = out + internal::kIq4XsPackedQ + 256 * g;
        for (int j = 0; j < 16; ++j) {
          q[ChunkByte(j / 4, r, j % 4)] = x->qs[16 * g + j] & 0x0f;
          q[ChunkByte((j + 16) / 4, r, j % 4)] = x->qs[16 * g + j] >> 4;
        }
      }
    }
  }
}

// ---- wide -> stored (the compact layouts of gemm_packed.h) ----

// Q5_0 / Q4_0: per block, chunk k and chunk k + 4 share a nibble vector;
// Q5_0's fifth bits follow, byte i holding those of byte i of chunks 0-7.
void Compact32(TensorType type, const uint8_t* wide, int64_t cols, uint8_t* stored) {
  const int64_t nb = cols / 32;
  const size_t scales = internal::QuantBase32(type, nb);
  std::memcpy(stored, wide, scales);
  const bool q5 = type == TensorType::kQ5_0 || type == TensorType::kQ5_1;
  const size_t block = q5 ? internal::kStoredBlockQ5_0 : internal::kStoredBlockQ4_0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* in = wide + scales + b * kPackedBlock32QuantBytes;
    uint8_t* out = stored + scales + b * block;
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 32; ++i) {
        out[32 * k + i] =
            static_cast<uint8_t>((in[32 * k + i] & 0x0f) | ((in[32 * (k + 4) + i] & 0x0f) << 4));
      }
    }
    if (!q5) continue;
    for (int i = 0; i < 32; ++i) {
      int bits = 0;
      for (int c = 0; c < 8; ++c) bits |= ((in[32 * c + i] >> 4) & 1) << c;
      out[128 + i] = static_cast<uint8_t>(bits);
    }
  }
}

// The 4 nibble vectors of one block of 8 chunks of 4-bit bytes (Q4_0's
// stored block): vector k holds chunk k (low nibbles) and chunk k + 4.
void CompactNibbles(const uint8_t* in, uint8_t* out) {
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 32; ++i) {
      out[32 * k + i] =
          static_cast<uint8_t>((in[32 * k + i] & 0x0f) | ((in[32 * (k + 4) + i] & 0x0f) << 4));
    }
  }
}

void CompactIq4Xs(const uint8_t* wide, int64_t cols, uint8_t* stored) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = wide + s * internal::kIq4XsPackedBytes;
    uint8_t* out = stored + s * internal::kIq4XsStoredBytes;
    std::memcpy(out, in, internal::kIq4XsPackedQ);  // d, padding, scales
    for (int g = 0; g < 8; ++g) {
      CompactNibbles(in + internal::kIq4XsPackedQ + 256 * g,
                     out + internal::kIq4XsPackedQ + internal::kIq4XsStoredGroupBytes * g);
    }
  }
}

// Q6_K: per 16-element group g (chunks 4g .. 4g + 3), chunks 4g and 4g + 1
// share a nibble vector, 4g + 2 and 4g + 3 another, and the high bit pairs
// of all four share a byte vector (chunk 4g + j in bits 2j + 1:2j).
void CompactQ6_K(const uint8_t* wide, int64_t cols, uint8_t* stored) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = wide + s * internal::kQ6KPackedBytes;
    uint8_t* out = stored + s * internal::kQ6KStoredBytes;
    std::memcpy(out, in, internal::kQ6KPackedQ);  // d, padding, scales
    const uint8_t* q = in + internal::kQ6KPackedQ;
    for (int g = 0; g < 16; ++g) {
      const uint8_t* c = q + 128 * g;  // chunk 4g
      uint8_t* o = out + internal::kQ6KStoredGroups + internal::kQ6KStoredGroupBytes * g;
      for (int i = 0; i < 32; ++i) {
        o[i] = static_cast<uint8_t>((c[i] & 0x0f) | ((c[32 + i] & 0x0f) << 4));
        o[32 + i] = static_cast<uint8_t>((c[64 + i] & 0x0f) | ((c[96 + i] & 0x0f) << 4));
        int bits = 0;
        for (int j = 0; j < 4; ++j) bits |= ((c[32 * j + i] >> 4) & 3) << (2 * j);
        o[64 + i] = static_cast<uint8_t>(bits);
      }
    }
  }
}

// Q2_K: the header as wide, the 2-bit quants four to a byte.
void CompactQ2_K(const uint8_t* wide, int64_t cols, uint8_t* stored) {
  using namespace internal;  // NOLINT(build/namespaces): the layout constants
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = wide + s * kQ2KPackedBytes;
    uint8_t* out = stored + s * kQ2KStoredBytes;
    std::memcpy(out, in, kQ2KPackedQ);
    std::memset(out + kQ2KPackedQ, 0, kQ2KStoredBytes - kQ2KPackedQ);
    for (int c = 0; c < 64; ++c) {
      for (int i = 0; i < 32; ++i) {
        out[kQ2KPackedQ + 32 * (c / 4) + i] |=
            static_cast<uint8_t>((in[kQ2KPackedQ + 32 * c + i] & 3) << (2 * (c % 4)));
      }
    }
  }
}

// Q3_K: the scales and the 3-bit quants squeezed as gemm_packed.h says.
void CompactQ3_K(const uint8_t* wide, int64_t cols, uint8_t* stored) {
  using namespace internal;  // NOLINT(build/namespaces): the layout constants
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = wide + s * kQ6KPackedBytes;
    uint8_t* out = stored + s * kQ3KStoredBytes;
    std::memset(out, 0, kQ3KStoredBytes);
    std::memcpy(out, in + kQ6KPackedD, 16);
    for (int p = 0; p < 8; ++p) {
      for (int j = 0; j < 16; ++j) {  // j = 2r + k: row r's scale of group 2p + k
        const int v = static_cast<int8_t>(in[kQ6KPackedSc + 16 * p + j]) + 32;
        out[kQ3KStoredScLow + 8 * p + j / 2] |= static_cast<uint8_t>((v & 0x0f) << (4 * (j % 2)));
        out[kQ3KStoredScHigh + 4 * p + j / 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j % 4)));
      }
    }
    const uint8_t* q = in + kQ6KPackedQ;
    for (int c = 0; c < 64; ++c) {
      for (int i = 0; i < 32; ++i) {
        out[kQ3KStoredLow + 32 * (c / 4) + i] |=
            static_cast<uint8_t>((q[32 * c + i] & 3) << (2 * (c % 4)));
        out[kQ3KStoredHigh + 32 * (c / 8) + i] |=
            static_cast<uint8_t>(((q[32 * c + i] >> 2) & 1) << (c % 8));
      }
    }
  }
}

constexpr int kLevels = static_cast<int>(IsaLevel::kAmx) + 1;
using Table = std::array<std::array<GemmPackedFn, quant::kMaxTypeId>, kLevels>;

Table BuildTable() {
  Table t{};
  for (uint32_t id = 0; id < quant::kMaxTypeId; ++id) {
    const auto traits = TraitsOf(id);
    if (!traits.has_value() || !CanPack(traits->type)) continue;
    t[static_cast<int>(IsaLevel::kScalar)][id] = internal::RefGemmPacked(traits->type);
    t[static_cast<int>(IsaLevel::kAvx2)][id] = internal::Avx2GemmPacked(traits->type);
    t[static_cast<int>(IsaLevel::kAvx512Vnni)][id] = internal::Avx512VnniGemmPacked(traits->type);
    // AMX kernels run prefill-sized products themselves and hand the rest
    // (decode) to the VNNI kernel; types without one read VNNI's entry.
    t[static_cast<int>(IsaLevel::kAmx)][id] = internal::AmxGemmPacked(traits->type);
  }
  return t;
}

}  // namespace

bool CanPack(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
    case TensorType::kQ5_0:
    case TensorType::kQ4_0:
    case TensorType::kQ5_1:
    case TensorType::kQ4_1:
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kIQ4_NL:
    case TensorType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

size_t PackedGroupBytes(TensorType type, int64_t cols) {
  const int64_t nb = cols / 32;
  switch (type) {
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
      return internal::QuantBase32(type, nb) + static_cast<size_t>(nb) * internal::kStoredBlockQ5_0;
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kIQ4_NL:
      return internal::QuantBase32(type, nb) + static_cast<size_t>(nb) * internal::kStoredBlockQ4_0;
    case TensorType::kIQ4_XS:
      return static_cast<size_t>(cols / kQkK) * internal::kIq4XsStoredBytes;
    case TensorType::kQ6_K:
      return static_cast<size_t>(cols / kQkK) * internal::kQ6KStoredBytes;
    case TensorType::kQ3_K:
      return static_cast<size_t>(cols / kQkK) * internal::kQ3KStoredBytes;
    case TensorType::kQ2_K:
      return static_cast<size_t>(cols / kQkK) * internal::kQ2KStoredBytes;
    default:
      return internal::WideGroupBytes(type, cols);
  }
}

void PackGroup(TensorType type, const uint8_t* src, size_t row_bytes, int n_rows, int64_t cols,
               uint8_t* dst) {
  // The wide layout first (in dst itself when it is the stored one), then
  // its compact form (for IQ4_NL and IQ4_XS the wide layout with the table
  // indices in place of their values). One buffer per packing thread, not
  // one per group.
  thread_local std::vector<uint8_t> buffer;
  uint8_t* wide = dst;
  if (internal::IsCompact(type)) {
    buffer.resize(std::max(buffer.size(), internal::WideGroupBytes(type, cols)));
    wide = buffer.data();
  }
  std::memset(wide, 0, internal::WideGroupBytes(type, cols));
  switch (type) {
    case TensorType::kQ4_K:
      return PackGroupK4<BlockQ4_K, false>(src, row_bytes, n_rows, cols, wide);
    case TensorType::kQ5_K:
      return PackGroupK4<BlockQ5_K, true>(src, row_bytes, n_rows, cols, wide);
    case TensorType::kQ6_K:
      PackGroupQ6_K(src, row_bytes, n_rows, cols, wide);
      return CompactQ6_K(wide, cols, dst);
    case TensorType::kQ3_K:
      PackGroupQ3_K(src, row_bytes, n_rows, cols, wide);
      return CompactQ3_K(wide, cols, dst);
    case TensorType::kQ2_K:
      PackGroupQ2_K(src, row_bytes, n_rows, cols, wide);
      return CompactQ2_K(wide, cols, dst);
    case TensorType::kIQ4_XS:
      PackGroupIq4Xs(src, row_bytes, n_rows, cols, wide);
      return CompactIq4Xs(wide, cols, dst);
    default:
      PackGroup32(type, src, row_bytes, n_rows, cols, wide);
      if (internal::IsCompact(type)) Compact32(type, wide, cols, dst);
      return;
  }
}

namespace {

// UnpackRow's K-quant cases: the inverses of PackGroupK4 and of
// PackGroupQ6_K followed by CompactQ6_K, for row r of a stored group.
template <typename Block, bool kFive>
void UnpackRowK4(const uint8_t* group, int r, int64_t cols, uint8_t* dst) {
  const size_t sb_bytes = kFive ? internal::kQ5KPackedBytes : internal::kQ4KPackedBytes;
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = group + s * sb_bytes;
    auto* x = reinterpret_cast<Block*>(dst) + s;
    std::memcpy(&x->d, in + internal::kQ4KPackedD + 2 * r, 2);
    std::memcpy(&x->dmin, in + internal::kQ4KPackedDmin + 2 * r, 2);
    uint8_t sc[8], m[8];
    for (int g = 0; g < 8; ++g) {
      sc[g] = in[internal::kQ4KPackedSc + 8 * g + r];
      m[g] = in[internal::kQ4KPackedM + 8 * g + r];
    }
    PackK4Scales(sc, m, x->scales);
    const uint8_t* q = in + internal::kQ4KPackedQ;
    for (int p = 0; p < 4; ++p) {
      for (int l = 0; l < 32; ++l) x->qs[32 * p + l] = q[256 * p + ChunkByte(l / 4, r, l % 4)];
    }
    if constexpr (kFive) {
      const uint8_t* h = in + internal::kQ5KPackedH;
      for (int l = 0; l < 32; ++l) {
        int bits = 0;
        for (int g = 0; g < 8; ++g) bits |= ((h[32 * g + 4 * r + l % 4] >> (l / 4)) & 1) << g;
        x->qh[l] = static_cast<uint8_t>(bits);
      }
    }
  }
}

void UnpackRowQ6_K(const uint8_t* group, int r, int64_t cols, uint8_t* dst) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = group + s * internal::kQ6KStoredBytes;
    auto* x = reinterpret_cast<BlockQ6_K*>(dst) + s;
    std::memcpy(&x->d, in + internal::kQ6KPackedD + 2 * r, 2);
    for (int p = 0; p < 8; ++p) {
      for (int k = 0; k < 2; ++k) {
        x->scales[2 * p + k] = static_cast<int8_t>(in[internal::kQ6KPackedSc + 16 * p + 2 * r + k]);
      }
    }
    std::memset(x->ql, 0, sizeof(x->ql));
    std::memset(x->qh, 0, sizeof(x->qh));
    for (int e = 0; e < kQkK; ++e) {
      const int c = e / 4, g = c / 4, j = c % 4;  // chunk, its 16-element group, its place there
      const int i = 4 * r + e % 4;                // byte in the chunk
      const uint8_t* o = in + internal::kQ6KStoredGroups + internal::kQ6KStoredGroupBytes * g;
      const int low = (o[32 * (j / 2) + i] >> (4 * (j % 2))) & 0x0f;
      const int high = (o[64 + i] >> (2 * j)) & 3;
      const int h = e / 128, k = (e / 32) % 4, l = e % 32;
      x->ql[64 * h + 32 * (k % 2) + l] |= static_cast<uint8_t>(low << (4 * (k / 2)));
      x->qh[32 * h + l] |= static_cast<uint8_t>(high << (2 * k));
    }
  }
}

// The inverse of PackGroupQ2_K and CompactQ2_K for row r.
void UnpackRowQ2_K(const uint8_t* group, int r, int64_t cols, uint8_t* dst) {
  using namespace internal;  // NOLINT(build/namespaces): the layout constants
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = group + s * kQ2KStoredBytes;
    auto* x = reinterpret_cast<BlockQ2_K*>(dst) + s;
    std::memcpy(&x->d, in + kQ2KPackedD + 2 * r, 2);
    std::memcpy(&x->dmin, in + kQ2KPackedDmin + 2 * r, 2);
    for (int g = 0; g < 16; ++g) x->scales[g] = in[kQ2KPackedSc + 16 * (g / 2) + 2 * r + g % 2];
    std::memset(x->qs, 0, sizeof(x->qs));
    for (int e = 0; e < kQkK; ++e) {
      const int c = e / 4, i = 4 * r + e % 4;  // chunk, byte in the chunk
      const int q = (in[kQ2KPackedQ + 32 * (c / 4) + i] >> (2 * (c % 4))) & 3;
      const int h = e / 128, j = (e / 32) % 4, l = e % 32;
      x->qs[32 * h + l] |= static_cast<uint8_t>(q << (2 * j));
    }
  }
}

// The inverse of PackGroupQ3_K and CompactQ3_K for row r (and of
// UnpackQ3_KScales).
void UnpackRowQ3_K(const uint8_t* group, int r, int64_t cols, uint8_t* dst) {
  using namespace internal;  // NOLINT(build/namespaces): the layout constants
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = group + s * kQ3KStoredBytes;
    auto* x = reinterpret_cast<BlockQ3_K*>(dst) + s;
    std::memcpy(&x->d, in + 2 * r, 2);
    std::memset(x->scales, 0, sizeof(x->scales));
    std::memset(x->hmask, 0, sizeof(x->hmask));
    std::memset(x->qs, 0, sizeof(x->qs));
    for (int g = 0; g < 16; ++g) {
      const int p = g / 2, j = 2 * r + g % 2;
      const int low = (in[kQ3KStoredScLow + 8 * p + r] >> (4 * (g % 2))) & 0x0f;
      const int high = (in[kQ3KStoredScHigh + 4 * p + j / 4] >> (2 * (j % 4))) & 3;
      x->scales[g % 8] |= static_cast<uint8_t>(low << (4 * (g / 8)));
      x->scales[8 + g % 4] |= static_cast<uint8_t>(high << (2 * (g / 4)));
    }
    for (int e = 0; e < kQkK; ++e) {
      const int c = e / 4, i = 4 * r + e % 4;  // chunk, byte in the chunk
      const int low = (in[kQ3KStoredLow + 32 * (c / 4) + i] >> (2 * (c % 4))) & 3;
      const int high = (in[kQ3KStoredHigh + 32 * (c / 8) + i] >> (c % 8)) & 1;
      const int h = e / 128, j = (e / 32) % 4, l = e % 32;
      x->qs[32 * h + l] |= static_cast<uint8_t>(low << (2 * j));
      x->hmask[l] |= static_cast<uint8_t>(high << (4 * h + j));
    }
  }
}

void UnpackRowIq4Xs(const uint8_t* group, int r, int64_t cols, uint8_t* dst) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = group + s * internal::kIq4XsStoredBytes;
    auto* x = reinterpret_cast<BlockIq4Xs*>(dst) + s;
    std::memcpy(&x->d, in + internal::kIq4XsPackedD + 2 * r, 2);
    x->scales_h = 0;
    std::memset(x->scales_l, 0, sizeof(x->scales_l));
    for (int g = 0; g < 8; ++g) {
      const int ls = static_cast<int8_t>(in[internal::kIq4XsPackedSc + 8 * g + r]) + 32;
      x->scales_l[g / 2] |= static_cast<uint8_t>((ls & 0x0f) << (4 * (g % 2)));
      x->scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * g));
      const uint8_t* o = in + internal::kIq4XsPackedQ + internal::kIq4XsStoredGroupBytes * g;
      uint8_t idx[32];
      for (int e = 0; e < 32; ++e) {
        const int c = e / 4, i = 4 * r + e % 4;  // chunk, byte in the chunk
        idx[e] = (o[32 * (c % 4) + i] >> (4 * (c / 4))) & 0x0f;
      }
      for (int j = 0; j < 16; ++j) {
        x->qs[16 * g + j] = static_cast<uint8_t>(idx[j] | (idx[j + 16] << 4));
      }
    }
  }
}

}  // namespace

void UnpackRow(const PackedMatrix& m, int64_t row, uint8_t* dst) {
  const uint8_t* group = m.Group(row / kPackRows);
  const int r = static_cast<int>(row % kPackRows);
  if (m.type == TensorType::kQ4_K) return UnpackRowK4<BlockQ4_K, false>(group, r, m.cols, dst);
  if (m.type == TensorType::kQ5_K) return UnpackRowK4<BlockQ5_K, true>(group, r, m.cols, dst);
  if (m.type == TensorType::kQ6_K) return UnpackRowQ6_K(group, r, m.cols, dst);
  if (m.type == TensorType::kQ3_K) return UnpackRowQ3_K(group, r, m.cols, dst);
  if (m.type == TensorType::kQ2_K) return UnpackRowQ2_K(group, r, m.cols, dst);
  if (m.type == TensorType::kIQ4_XS) return UnpackRowIq4Xs(group, r, m.cols, dst);
  const int64_t nb = m.cols / 32;
  const uint32_t block_bytes = Traits(m.type).block_bytes;
  const uint8_t* qs = group + internal::QuantBase32(m.type, nb);
  const bool q5 = m.type == TensorType::kQ5_0 || m.type == TensorType::kQ5_1;
  const bool mins = internal::HasMins32(m.type);
  const size_t stored_block = m.type == TensorType::kQ8_0 ? kPackedBlock32QuantBytes
                              : q5                        ? internal::kStoredBlockQ5_0
                                                          : internal::kStoredBlockQ4_0;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* block = dst + b * block_bytes;
    std::memcpy(block, group + 2 * (kPackRows * b + r), 2);  // f16 d, as PackGroup32 took it
    if (mins) {
      std::memcpy(block + 2, group + internal::PackedScaleBytes32(nb) + 2 * (kPackRows * b + r), 2);
    }
    const uint8_t* in = qs + b * stored_block;
    uint8_t q[32];
    for (int e = 0; e < 32; ++e) {
      const int c = e / 4, i = 4 * r + e % 4;  // chunk, byte in the chunk
      if (m.type == TensorType::kQ8_0) {
        q[e] = in[32 * c + i];
      } else {  // the stored layout of gemm_packed.h
        const int nibble = (in[32 * (c % 4) + i] >> (4 * (c / 4))) & 0x0f;
        const int fifth = q5 ? (in[128 + i] >> c) & 1 : 0;
        q[e] = static_cast<uint8_t>(nibble | (fifth << 4));
      }
    }
    StoreBlock32Quants(m.type, q, block);
  }
}

void SummarizeQ8_0(const uint8_t* rows, size_t stride, int64_t n_tokens, int64_t cols,
                   float* block_d, int32_t* block_sum) {
  const int64_t nb = cols / 32;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_0*>(rows + t * stride);
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sum = 0;
      for (int8_t q : y[b].qs) sum += q;
      block_d[t * nb + b] = Fp16ToFp32(y[b].d);
      block_sum[t * nb + b] = sum;
    }
  }
}

void SummarizeQ8_1(const uint8_t* rows, size_t stride, int64_t n_tokens, int64_t cols,
                   float* block_d, float* block_s) {
  const int64_t nb = cols / 32;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_1*>(rows + t * stride);
    for (int64_t b = 0; b < nb; ++b) {
      block_d[t * nb + b] = Fp16ToFp32(y[b].d);
      block_s[t * nb + b] = Fp16ToFp32(y[b].s);
    }
  }
}

GemmPackedFn GetGemmPackedAt(TensorType type, IsaLevel level) {
  static const Table table = BuildTable();
  const uint32_t id = static_cast<uint32_t>(type);
  if (id >= quant::kMaxTypeId) return nullptr;
  for (int l = std::min(static_cast<int>(level), kLevels - 1); l >= 0; --l) {
    if (table[l][id] != nullptr) return table[l][id];
  }
  return nullptr;
}

GemmPackedFn GetGemmPacked(TensorType type) {
  static const IsaLevel level = HostCpu().Level();
  return GetGemmPackedAt(type, level);
}

namespace internal {

size_t WideGroupBytes(TensorType type, int64_t cols) {
  switch (type) {
    case TensorType::kQ4_K:
      return static_cast<size_t>(cols / kQkK) * kQ4KPackedBytes;
    case TensorType::kQ5_K:
      return static_cast<size_t>(cols / kQkK) * kQ5KPackedBytes;
    case TensorType::kQ6_K:
    case TensorType::kQ3_K:
      return static_cast<size_t>(cols / kQkK) * kQ6KPackedBytes;
    case TensorType::kQ2_K:
      return static_cast<size_t>(cols / kQkK) * kQ2KPackedBytes;
    case TensorType::kIQ4_XS:
      return static_cast<size_t>(cols / kQkK) * kIq4XsPackedBytes;
    default:
      return QuantBase32(type, cols / 32) +
             static_cast<size_t>(cols / 32) * kPackedBlock32QuantBytes;
  }
}

bool IsCompact(TensorType type) {
  return type == TensorType::kQ5_0 || type == TensorType::kQ4_0 || type == TensorType::kQ5_1 ||
         type == TensorType::kQ4_1 || type == TensorType::kQ6_K || type == TensorType::kQ3_K ||
         type == TensorType::kQ2_K || type == TensorType::kIQ4_NL || type == TensorType::kIQ4_XS;
}

ThreadBuffer::~ThreadBuffer() {
  if (data_ != nullptr) ::operator delete(data_, std::align_val_t(kPackAlign));
}

uint8_t* ThreadBuffer::Get(size_t n) {
  if (n > bytes_) {
    if (data_ != nullptr) ::operator delete(data_, std::align_val_t(kPackAlign));
    data_ = static_cast<uint8_t*>(::operator new(n, std::align_val_t(kPackAlign)));
    bytes_ = n;
  }
  return data_;
}

WideGroups::WideGroups(const PackedMatrix& w, ExpandFn expand) : w_(w), expand_(expand) {
  if (expand == nullptr || !IsCompact(w.type)) return;
  slot_bytes_ = (WideGroupBytes(w.type, w.cols) + kPackAlign - 1) / kPackAlign * kPackAlign;
  thread_local ThreadBuffer buffer;
  buffer_ = buffer.Get(2 * slot_bytes_);
}

const uint8_t* WideGroups::Get(int64_t g, int slot) {
  if (buffer_ == nullptr) return w_.Group(g);
  uint8_t* wide = buffer_ + static_cast<size_t>(slot) * slot_bytes_;
  expand_(w_.type, w_.Group(g), w_.cols, wide);
  return wide;
}

}  // namespace internal

}  // namespace ellm::kernels

// Scalar reference for the packed GEMM: the truth the SIMD kernels are tested
// against. It reads the packed layout element by element and repeats
// vec_dot_ref.cc's arithmetic in its order (exact integer sums per block,
// the same float products and sequential sum over blocks), so each output
// equals RefVecDot of the unpacked row bit for bit.
// Built with -ffp-contract=off so each multiply and add rounds as written.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/gemm_packed_isa.h"
#include "quant/fp16.h"
#include "quant/iq4_nl.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

namespace ellm::kernels::internal {
namespace {

using namespace ellm::quant;  // NOLINT(build/namespaces): block types and fp16 helpers

inline size_t ChunkByte(int64_t e, int r) {
  return static_cast<size_t>(e / 4) * 32 + static_cast<size_t>(4 * r + e % 4);
}

inline float PackedHalf(const uint8_t* p, int index) {
  uint16_t h;
  std::memcpy(&h, p + 2 * index, 2);
  return Fp16ToFp32(h);
}

// One output of the Q8_0 family. kOffset: 0 (Q8_0, signed quants), 8 (Q4_0)
// or 16 (Q5_0) is subtracted from the stored unsigned quant. kMin (Q4_1 with
// kOffset 8, Q5_1 with 16; Q8_1 activations): nothing is subtracted, each
// block adds m * s, as DotQ4_1 / DotQ5_1.
// `group` is the row's group in the wide layout, `r` its row in the group.
template <int kOffset, bool kMin = false>
float DotPacked32(const PackedMatrix& w, const uint8_t* group, int r,
                  const std::conditional_t<kMin, BlockQ8_1, BlockQ8_0>* y) {
  const int64_t nb = w.cols / 32;
  const uint8_t* qs = group + PackedScaleBytes32(nb) * (kMin ? 2 : 1);
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = qs + b * kPackedBlock32QuantBytes;
    int sumi = 0;
    for (int e = 0; e < 32; ++e) {
      const int wq = kOffset == 0 ? static_cast<int8_t>(q[ChunkByte(e, r)])
                     : kMin       ? static_cast<int>(q[ChunkByte(e, r)])
                                  : static_cast<int>(q[ChunkByte(e, r)]) - kOffset;
      sumi += wq * y[b].qs[e];
    }
    const float dw = PackedHalf(group, static_cast<int>(kPackRows * b + r));
    const float da = Fp16ToFp32(y[b].d);
    if constexpr (kMin) {  // as DotQ4_1, DotQ5_1
      const float mw =
          PackedHalf(group + PackedScaleBytes32(nb), static_cast<int>(kPackRows * b + r));
      sum += (dw * da) * static_cast<float>(sumi) + mw * Fp16ToFp32(y[b].s);
    } else if constexpr (kOffset == 0) {
      sum += static_cast<float>(sumi) * (dw * da);  // as DotQ8_0
    } else if constexpr (kOffset == 8) {
      sum += static_cast<float>(sumi) * dw * da;  // as DotQ4_0
    } else {
      sum += (dw * da) * static_cast<float>(sumi);  // as DotQ5_0
    }
  }
  return sum;
}

// Q4_K and Q5_K (kFive: the fifth bits after Q4_K's super-block), as DotK4.
template <bool kFive>
float DotPackedK4(const PackedMatrix& w, const uint8_t* group, int r, const BlockQ8_K* y) {
  const size_t sb_bytes = kFive ? kQ5KPackedBytes : kQ4KPackedBytes;
  float sum = 0.0f;
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    const uint8_t* sb = group + s * sb_bytes;
    int isum = 0, summs = 0;
    for (int g = 0; g < 8; ++g) {
      const int p = g / 2, shift = 4 * (g % 2);
      int isuml = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (sb[kQ4KPackedQ + 256 * p + ChunkByte(l, r)] >> shift) & 0x0f;
        if constexpr (kFive) q |= ((sb[kQ5KPackedH + 32 * g + 4 * r + l % 4] >> (l / 4)) & 1) << 4;
        isuml += q * y[s].qs[32 * g + l];
      }
      isum += sb[kQ4KPackedSc + 8 * g + r] * isuml;
      summs += sb[kQ4KPackedM + 8 * g + r] * (y[s].bsums[2 * g] + y[s].bsums[2 * g + 1]);
    }
    const float d = PackedHalf(sb + kQ4KPackedD, r) * y[s].d;
    const float dmin = PackedHalf(sb + kQ4KPackedDmin, r) * y[s].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// Q6_K (kBias 32) and Q3_K (kBias 4, its u = q + 4 in Q6_K's wide layout),
// as DotQ6_K and DotQ3_K.
template <int kBias>
float DotPackedQ6_K(const PackedMatrix& w, const uint8_t* group, int r, const BlockQ8_K* y) {
  float sum = 0.0f;
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    const uint8_t* sb = group + s * kQ6KPackedBytes;
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int isuml = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) {
        isuml += (sb[kQ6KPackedQ + ChunkByte(e, r)] - kBias) * y[s].qs[e];
      }
      const int sc = static_cast<int8_t>(sb[kQ6KPackedSc + 16 * (g / 2) + 2 * r + g % 2]);
      isum += sc * isuml;
    }
    sum += (PackedHalf(sb + kQ6KPackedD, r) * y[s].d) * static_cast<float>(isum);
  }
  return sum;
}

// Q2_K, as DotQ2_K: exact sums of sc * sumi and of m * bsum over the
// super-block, then dall * isum - dmin * summs.
float DotPackedQ2_K(const PackedMatrix& w, const uint8_t* group, int r, const BlockQ8_K* y) {
  float sum = 0.0f;
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    const uint8_t* sb = group + s * kQ2KPackedBytes;
    int isum = 0, summs = 0;
    for (int g = 0; g < 16; ++g) {
      int isuml = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) {
        isuml += sb[kQ2KPackedQ + ChunkByte(e, r)] * y[s].qs[e];
      }
      const int sc = sb[kQ2KPackedSc + 16 * (g / 2) + 2 * r + g % 2];
      isum += (sc & 0x0f) * isuml;
      summs += y[s].bsums[g] * (sc >> 4);
    }
    const float dall = y[s].d * PackedHalf(sb + kQ2KPackedD, r);
    const float dmin = y[s].d * PackedHalf(sb + kQ2KPackedDmin, r);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

// IQ4_XS (wide layout: the table's values), as DotIq4Xs: exact integer sums
// of (ls - 32) * sumi over the super-block, one multiply by d * y.d.
float DotPackedIq4Xs(const PackedMatrix& w, const uint8_t* group, int r, const BlockQ8_K* y) {
  float sum = 0.0f;
  for (int64_t s = 0; s < w.cols / kQkK; ++s) {
    const uint8_t* sb = group + s * kIq4XsPackedBytes;
    int isum = 0;
    for (int g = 0; g < 8; ++g) {
      int sumi = 0;
      for (int l = 0; l < 32; ++l) {
        sumi += static_cast<int8_t>(sb[kIq4XsPackedQ + 256 * g + ChunkByte(l, r)]) *
                y[s].qs[32 * g + l];
      }
      isum += static_cast<int8_t>(sb[kIq4XsPackedSc + 8 * g + r]) * sumi;
    }
    sum += (PackedHalf(sb + kIq4XsPackedD, r) * y[s].d) * static_cast<float>(isum);
  }
  return sum;
}

template <typename Block, float (*kDot)(const PackedMatrix&, const uint8_t*, int, const Block*)>
void Gemm(const PackedMatrix& w, int64_t row_begin, int64_t row_end, const GemmActivations& a,
          float* y, int64_t y_stride) {
  WideGroups wide(w, RefExpandGroup);
  for (int64_t g = row_begin / kPackRows; g * kPackRows < row_end; ++g) {
    const uint8_t* group = wide.Get(g, 0);
    const int64_t r0 = std::max(row_begin, g * kPackRows);
    const int64_t r1 = std::min(row_end, (g + 1) * kPackRows);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const Block* act = reinterpret_cast<const Block*>(a.rows + t * a.stride);
      for (int64_t r = r0; r < r1; ++r) {
        y[t * y_stride + (r - row_begin)] =
            kDot(w, group, static_cast<int>(r - g * kPackRows), act);
      }
    }
  }
}

// ---- stored -> wide: the inverse of gemm_packed.cc's Compact* ----

void Expand32(TensorType type, const uint8_t* stored, int64_t cols, uint8_t* wide) {
  const int64_t nb = cols / 32;
  const size_t scales = QuantBase32(type, nb);
  std::memcpy(wide, stored, scales);
  const bool q5 = type == TensorType::kQ5_0 || type == TensorType::kQ5_1;
  const bool iq4 = type == TensorType::kIQ4_NL;  // the wide bytes are the table's values
  const size_t block = q5 ? kStoredBlockQ5_0 : kStoredBlockQ4_0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* in = stored + scales + b * block;
    uint8_t* out = wide + scales + b * kPackedBlock32QuantBytes;
    for (int c = 0; c < 8; ++c) {
      for (int i = 0; i < 32; ++i) {
        const int nibble = (in[32 * (c % 4) + i] >> (4 * (c / 4))) & 0x0f;
        const int fifth = q5 ? (in[128 + i] >> c) & 1 : 0;
        out[32 * c + i] = iq4 ? static_cast<uint8_t>(kIq4NlValues[nibble])
                              : static_cast<uint8_t>(nibble | (fifth << 4));
      }
    }
  }
}

void ExpandIq4Xs(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kIq4XsStoredBytes;
    uint8_t* out = wide + s * kIq4XsPackedBytes;
    std::memcpy(out, in, kIq4XsPackedQ);  // d, padding, scales
    for (int g = 0; g < 8; ++g) {
      const uint8_t* o = in + kIq4XsPackedQ + kIq4XsStoredGroupBytes * g;
      for (int c = 0; c < 8; ++c) {
        for (int i = 0; i < 32; ++i) {
          const int nibble = (o[32 * (c % 4) + i] >> (4 * (c / 4))) & 0x0f;
          out[kIq4XsPackedQ + 256 * g + 32 * c + i] = static_cast<uint8_t>(kIq4NlValues[nibble]);
        }
      }
    }
  }
}

void ExpandQ2_K(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kQ2KStoredBytes;
    uint8_t* out = wide + s * kQ2KPackedBytes;
    std::memcpy(out, in, kQ2KPackedQ);
    for (int c = 0; c < 64; ++c) {
      for (int i = 0; i < 32; ++i) {
        out[kQ2KPackedQ + 32 * c + i] =
            static_cast<uint8_t>((in[kQ2KPackedQ + 32 * (c / 4) + i] >> (2 * (c % 4))) & 3);
      }
    }
  }
}

void ExpandQ3_K(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kQ3KStoredBytes;
    uint8_t* out = wide + s * kQ6KPackedBytes;
    std::memset(out, 0, kQ6KPackedQ);
    std::memcpy(out + kQ6KPackedD, in, 16);
    for (int p = 0; p < 8; ++p) {
      for (int j = 0; j < 16; ++j) {
        const int low = (in[kQ3KStoredScLow + 8 * p + j / 2] >> (4 * (j % 2))) & 0x0f;
        const int high = (in[kQ3KStoredScHigh + 4 * p + j / 4] >> (2 * (j % 4))) & 3;
        out[kQ6KPackedSc + 16 * p + j] = static_cast<uint8_t>((low | (high << 4)) - 32);
      }
    }
    for (int c = 0; c < 64; ++c) {
      for (int i = 0; i < 32; ++i) {
        const int low = (in[kQ3KStoredLow + 32 * (c / 4) + i] >> (2 * (c % 4))) & 3;
        const int high = (in[kQ3KStoredHigh + 32 * (c / 8) + i] >> (c % 8)) & 1;
        out[kQ6KPackedQ + 32 * c + i] = static_cast<uint8_t>(low | (high << 2));
      }
    }
  }
}

void ExpandQ6_K(const uint8_t* stored, int64_t cols, uint8_t* wide) {
  for (int64_t s = 0; s < cols / kQkK; ++s) {
    const uint8_t* in = stored + s * kQ6KStoredBytes;
    uint8_t* out = wide + s * kQ6KPackedBytes;
    std::memcpy(out, in, kQ6KPackedQ);  // d, padding, scales
    for (int c = 0; c < 64; ++c) {
      const uint8_t* g = in + kQ6KStoredGroups + kQ6KStoredGroupBytes * (c / 4);
      const int j = c % 4;
      for (int i = 0; i < 32; ++i) {
        const int nibble = (g[32 * (j / 2) + i] >> (4 * (j % 2))) & 0x0f;
        const int high = (g[64 + i] >> (2 * j)) & 3;
        out[kQ6KPackedQ + 32 * c + i] = static_cast<uint8_t>(nibble | (high << 4));
      }
    }
  }
}

}  // namespace

void RefExpandGroup(quant::TensorType type, const uint8_t* stored, int64_t cols, uint8_t* wide) {
  switch (type) {
    case TensorType::kQ6_K:
      return ExpandQ6_K(stored, cols, wide);
    case TensorType::kQ3_K:
      return ExpandQ3_K(stored, cols, wide);
    case TensorType::kQ2_K:
      return ExpandQ2_K(stored, cols, wide);
    case TensorType::kIQ4_XS:
      return ExpandIq4Xs(stored, cols, wide);
    default:
      return Expand32(type, stored, cols, wide);
  }
}

GemmPackedFn RefGemmPacked(quant::TensorType type) {
  using T = quant::TensorType;
  switch (type) {
    case T::kQ8_0:
      return Gemm<BlockQ8_0, DotPacked32<0>>;
    case T::kQ4_0:
      return Gemm<BlockQ8_0, DotPacked32<8>>;
    case T::kQ5_0:
      return Gemm<BlockQ8_0, DotPacked32<16>>;
    case T::kQ4_1:
      return Gemm<BlockQ8_1, DotPacked32<8, true>>;
    case T::kQ5_1:
      return Gemm<BlockQ8_1, DotPacked32<16, true>>;
    case T::kQ4_K:
      return Gemm<BlockQ8_K, DotPackedK4<false>>;
    case T::kQ5_K:
      return Gemm<BlockQ8_K, DotPackedK4<true>>;
    case T::kQ6_K:
      return Gemm<BlockQ8_K, DotPackedQ6_K<32>>;
    case T::kQ3_K:
      return Gemm<BlockQ8_K, DotPackedQ6_K<4>>;
    case T::kQ2_K:
      return Gemm<BlockQ8_K, DotPackedQ2_K>;
    // IQ4_NL's wide layout is Q8_0's (signed values, the table's), and
    // DotIq4Nl's (y.d * x.d) * sumi is DotQ8_0's sumi * (x.d * y.d): f32
    // products commute, so the bits are the same.
    case T::kIQ4_NL:
      return Gemm<BlockQ8_0, DotPacked32<0>>;
    case T::kIQ4_XS:
      return Gemm<BlockQ8_K, DotPackedIq4Xs>;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

// AVX2 + FMA + F16C dot products (x86-64-v3, our compile baseline, so this
// file needs no extra flags). Same math as vec_dot_ref.cc: exact integer sums
// inside a block, float accumulation across blocks; only the order of the
// float additions differs (8 lanes, then a horizontal sum), as in ggml's
// AVX2 kernels.
//
// The signed-by-signed byte products use the usual VPSIGNB trick: |w| as
// unsigned times (a with w's sign) through VPMADDUBSW. That is exact as long
// as no activation byte is -128 (negating it would wrap), which every encoder
// in quant.h guarantees: Q8_0/Q8_1/Q8_K quants are in [-127, 127]. Weight
// bytes may be anything. Pairwise VPMADDUBSW sums never saturate for these
// formats (largest: Q8_0's 2 * 128 * 127 < 32767).
#include "kernels/vec_dot_isa.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

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

namespace ellm::kernels::internal {
namespace {

using namespace ellm::quant;  // NOLINT(build/namespaces): block types

inline float Half(uint16_t h) { return _cvtsh_ss(h); }

inline float HsumF32(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Sums of four adjacent u8 * i8 products, as 8 x i32.
inline __m256i DotU8I8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
// Sums of four adjacent i8 * i8 products. REQUIRES: no byte of a is -128.
inline __m256i DotI8I8(__m256i w, __m256i a) {
  return DotU8I8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}

// 16 packed nibbles -> 32 bytes: low nibbles first, then high nibbles (the
// element order of Q4_0/Q4_1/Q5_0/Q5_1 blocks).
inline __m256i Nibbles32(const uint8_t* p) {
  const __m128i v = Load128(p);
  const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(0x0f));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0f));
  return _mm256_set_m128i(hi, lo);
}

// 32 bits (little-endian) -> 32 bytes, 0xff where the bit is set.
inline __m256i BytesFromBits32(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i mask = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
}

// ---- plain floats: four 8-lane FMA accumulators, scalar tail ----

// Rows is a pair of pointers that can load 8 lanes of each row as f32
// (Load8) and one element of each (At).
template <typename Rows>
float DotFloat(int64_t n, const Rows& rows) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 x, y;
    rows.Load8(i, &x, &y);
    acc0 = _mm256_fmadd_ps(x, y, acc0);
    rows.Load8(i + 8, &x, &y);
    acc1 = _mm256_fmadd_ps(x, y, acc1);
    rows.Load8(i + 16, &x, &y);
    acc2 = _mm256_fmadd_ps(x, y, acc2);
    rows.Load8(i + 24, &x, &y);
    acc3 = _mm256_fmadd_ps(x, y, acc3);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 x, y;
    rows.Load8(i, &x, &y);
    acc0 = _mm256_fmadd_ps(x, y, acc0);
  }
  float tail = 0.0f;
  for (; i < n; ++i) {
    float x, y;
    rows.At(i, &x, &y);
    tail += x * y;
  }
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
  return HsumF32(sum) + tail;
}

struct F32Rows {
  const float* x;
  const float* y;
  void Load8(int64_t i, __m256* vx, __m256* vy) const {
    *vx = _mm256_loadu_ps(x + i);
    *vy = _mm256_loadu_ps(y + i);
  }
  void At(int64_t i, float* sx, float* sy) const {
    *sx = x[i];
    *sy = y[i];
  }
};

struct F16Rows {
  const uint16_t* x;
  const uint16_t* y;
  void Load8(int64_t i, __m256* vx, __m256* vy) const {
    *vx = _mm256_cvtph_ps(Load128(x + i));
    *vy = _mm256_cvtph_ps(Load128(y + i));
  }
  void At(int64_t i, float* sx, float* sy) const {
    *sx = Half(x[i]);
    *sy = Half(y[i]);
  }
};

struct BF16Rows {
  const uint16_t* x;
  const uint16_t* y;
  static __m256 Widen(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(Load128(p)), 16));
  }
  void Load8(int64_t i, __m256* vx, __m256* vy) const {
    *vx = Widen(x + i);
    *vy = Widen(y + i);
  }
  void At(int64_t i, float* sx, float* sy) const {
    uint32_t bx = static_cast<uint32_t>(x[i]) << 16, by = static_cast<uint32_t>(y[i]) << 16;
    std::memcpy(sx, &bx, sizeof(float));
    std::memcpy(sy, &by, sizeof(float));
  }
};

float DotF32(int64_t n, const void* w, const void* a) {
  return DotFloat(n, F32Rows{static_cast<const float*>(w), static_cast<const float*>(a)});
}
float DotF16(int64_t n, const void* w, const void* a) {
  return DotFloat(n, F16Rows{static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a)});
}
float DotBF16(int64_t n, const void* w, const void* a) {
  return DotFloat(n, BF16Rows{static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a)});
}

// ---- 32-element blocks against Q8_0 / Q8_1 ----

// Shared loop for the formats with one scale per 32 elements. Kernel::Ints
// returns the 8 x i32 partial integer dot products of block b; Kernel::Scale
// the f32 factor they are multiplied by; Kernel::Offset, when kHasOffset, the
// block's constant term m * s (Q4_1, Q5_1).
template <typename Kernel>
float DotBlocks32(int64_t n, const Kernel& k) {
  const int64_t nb = n / 32;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float offset = 0.0f;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(k.Scale(b)), _mm256_cvtepi32_ps(k.Ints(b)), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(k.Scale(b + 1)), _mm256_cvtepi32_ps(k.Ints(b + 1)), acc1);
    if constexpr (Kernel::kHasOffset) offset += k.Offset(b) + k.Offset(b + 1);
  }
  if (b < nb) {
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(k.Scale(b)), _mm256_cvtepi32_ps(k.Ints(b)), acc0);
    if constexpr (Kernel::kHasOffset) offset += k.Offset(b);
  }
  return HsumF32(_mm256_add_ps(acc0, acc1)) + offset;
}

// Signed weight bytes of one block of the Q8_0-activation formats without an
// offset, shared by the single- and four-row kernels.
inline __m256i WeightBytes(const BlockQ8_0& x) { return Load256(x.qs); }
inline __m256i WeightBytes(const BlockQ4_0& x) {
  return _mm256_sub_epi8(Nibbles32(x.qs), _mm256_set1_epi8(8));
}
// The table's values of 32 nibbles (Nibbles32's order), by VPSHUFB.
inline __m256i Iq4Values32(const uint8_t* p) {
  const __m256i table = _mm256_broadcastsi128_si256(Load128(kIq4NlValues));
  return _mm256_shuffle_epi8(table, Nibbles32(p));
}
inline __m256i WeightBytes(const BlockIq4Nl& x) { return Iq4Values32(x.qs); }
inline __m256i WeightBytes(const BlockQ5_0& x) {
  // q - 16 is q itself when the fifth bit is set and q | 0xf0 (q - 16 in
  // two's complement) when it is clear.
  const __m256i high_clear = _mm256_andnot_si256(BytesFromBits32(x.qh), _mm256_set1_epi8(-16));
  return _mm256_or_si256(Nibbles32(x.qs), high_clear);
}

// Q8_0, Q4_0, Q5_0, IQ4_NL against Q8_0 activations.
template <typename W>
struct SignedWeightKernel {
  static constexpr bool kHasOffset = false;
  const W* x;
  const BlockQ8_0* y;
  __m256i Ints(int64_t b) const { return DotI8I8(WeightBytes(x[b]), Load256(y[b].qs)); }
  float Scale(int64_t b) const { return Half(x[b].d) * Half(y[b].d); }
};

struct Q4_1Kernel {
  static constexpr bool kHasOffset = true;
  const BlockQ4_1* x;
  const BlockQ8_1* y;
  __m256i Ints(int64_t b) const { return DotU8I8(Nibbles32(x[b].qs), Load256(y[b].qs)); }
  float Scale(int64_t b) const { return Half(x[b].d) * Half(y[b].d); }
  float Offset(int64_t b) const { return Half(x[b].m) * Half(y[b].s); }
};

struct Q5_1Kernel {
  static constexpr bool kHasOffset = true;
  const BlockQ5_1* x;
  const BlockQ8_1* y;
  __m256i Ints(int64_t b) const {
    const __m256i high = _mm256_and_si256(BytesFromBits32(x[b].qh), _mm256_set1_epi8(0x10));
    const __m256i q = _mm256_or_si256(Nibbles32(x[b].qs), high);
    return DotU8I8(q, Load256(y[b].qs));
  }
  float Scale(int64_t b) const { return Half(x[b].d) * Half(y[b].d); }
  float Offset(int64_t b) const { return Half(x[b].m) * Half(y[b].s); }
};

template <typename Kernel, typename W, typename A>
float Dot32(int64_t n, const void* w, const void* a) {
  return DotBlocks32(n, Kernel{static_cast<const W*>(w), static_cast<const A*>(a)});
}

// Four activation rows against one weight row. Per row it accumulates
// exactly as DotBlocks32 does (even blocks in one accumulator, odd blocks in
// another, then one horizontal sum), so results equal the single-row
// kernel's bit for bit; the weight block is unpacked once per four rows.
template <typename W>
void Dot32x4(int64_t n, const void* wp, const void* ap, size_t a_stride, float* out) {
  const W* x = static_cast<const W*>(wp);
  const BlockQ8_0* y[4];
  for (int t = 0; t < 4; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(ap) + t * a_stride);
  }
  const int64_t nb = n / 32;
  __m256 acc[4][2];
  for (auto& a : acc) a[0] = a[1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = WeightBytes(x[b]);
    const __m256i q_abs = _mm256_sign_epi8(q, q);
    const float wd = Half(x[b].d);
    const int slot = static_cast<int>(b & 1);
    for (int t = 0; t < 4; ++t) {
      const __m256i ints = DotU8I8(q_abs, _mm256_sign_epi8(Load256(y[t][b].qs), q));
      acc[t][slot] = _mm256_fmadd_ps(_mm256_set1_ps(wd * Half(y[t][b].d)), _mm256_cvtepi32_ps(ints),
                                     acc[t][slot]);
    }
  }
  for (int t = 0; t < 4; ++t) out[t] = HsumF32(_mm256_add_ps(acc[t][0], acc[t][1]));
}

// ---- K-quants against Q8_K ----

// Scale vector for a VPMADDUBSW result covering groups 2p (lanes 0..7) and
// 2p + 1 (lanes 8..15) of 16 elements: i16 copies of scales[2p], scales[2p+1].
inline __m256i GroupPairScales(__m128i scales_i8, int p) {
  const int64_t lo = static_cast<int64_t>(0x0101010101010101ull * static_cast<uint64_t>(2 * p));
  const int64_t hi = static_cast<int64_t>(0x0101010101010101ull * static_cast<uint64_t>(2 * p + 1));
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales_i8, _mm_set_epi64x(hi, lo)));
}

inline __m256i Bsums(const BlockQ8_K& y) { return Load256(y.bsums); }

float DotQ2_K(int64_t n, const void* w, const void* a) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const __m128i packed = Load128(x[b].scales);
    const __m128i sc = _mm_and_si128(packed, _mm_set1_epi8(0x0f));
    const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f));
    const __m256i min_sum = _mm256_madd_epi16(Bsums(y[b]), _mm256_cvtepu8_epi16(mins));
    __m256i isum = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i q = Load256(x[b].qs + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const __m256i v = _mm256_and_si256(q, m3);
        q = _mm256_srli_epi16(q, 2);
        const __m256i p = _mm256_maddubs_epi16(v, Load256(y[b].qs + 128 * h + 32 * j));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, GroupPairScales(sc, 4 * h + j)));
      }
    }
    const float yd = y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(yd * Half(x[b].d)), _mm256_cvtepi32_ps(isum), acc);
    acc_min =
        _mm256_fmadd_ps(_mm256_set1_ps(yd * Half(x[b].dmin)), _mm256_cvtepi32_ps(min_sum), acc_min);
  }
  return HsumF32(acc) - HsumF32(acc_min);
}

float DotQ3_K(int64_t n, const void* w, const void* a) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    alignas(16) int8_t sc_bytes[16];
    UnpackQ3_KScales(x[b].scales, sc_bytes);
    const __m128i sc = Load128(sc_bytes);
    // With q' = q + 4 in [0, 7] (unsigned, so VPMADDUBSW applies):
    // sum sc * q * a = sum sc * q' * a - 4 * sum_g sc_g * bsums_g.
    const __m256i correction = _mm256_madd_epi16(Bsums(y[b]), _mm256_cvtepi8_epi16(sc));
    __m256i isum = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(correction, 2));
    __m256i hbits = Load256(x[b].hmask);  // bit 4h + j, consumed one per chunk
    for (int h = 0; h < 2; ++h) {
      __m256i q = Load256(x[b].qs + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const __m256i high = _mm256_and_si256(_mm256_slli_epi16(hbits, 2), m4);
        const __m256i v = _mm256_or_si256(_mm256_and_si256(q, m3), high);
        q = _mm256_srli_epi16(q, 2);
        hbits = _mm256_srli_epi16(hbits, 1);
        const __m256i p = _mm256_maddubs_epi16(v, Load256(y[b].qs + 128 * h + 32 * j));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, GroupPairScales(sc, 4 * h + j)));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(Half(x[b].d) * y[b].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return HsumF32(acc);
}

// UnpackK4Scales (quant/q4_k.h) with word operations, inlined: out[0..7] =
// scales, out[8..15] = mins. Groups 0..3 are the low 6 bits of bytes 0..3
// (scales) and 4..7 (mins); groups 4..7 take a nibble of bytes 8..11 and the
// top two bits of bytes 0..3 (scales) or 4..7 (mins).
inline void UnpackK4ScalesInline(const uint8_t packed[12], uint8_t out[16]) {
  uint32_t u[3];
  std::memcpy(u, packed, sizeof(u));
  const uint32_t words[4] = {
      u[0] & 0x3f3f3f3fu,
      (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4),
      u[1] & 0x3f3f3f3fu,
      ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4),
  };
  std::memcpy(out, words, sizeof(words));
}

// Q4_K and Q5_K: 8 groups of 32 with 6-bit scales and mins.
template <typename Block, bool kFiveBit>
float DotK4(int64_t n, const void* w, const void* a) {
  const Block* x = static_cast<const Block*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i m4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    alignas(16) uint8_t sc_m[16];  // 8 scales, then 8 mins
    UnpackK4ScalesInline(x[b].scales, sc_m);
    const uint8_t* sc = sc_m;
    const __m128i scales_mins = _mm_load_si128(reinterpret_cast<const __m128i*>(sc_m));
    // Each min covers two bsums: duplicate the bytes, then widen to i16.
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    const __m256i min_sum = _mm256_madd_epi16(Bsums(y[b]), m16);

    __m256i hbits;
    if constexpr (kFiveBit) hbits = Load256(x[b].qh);  // bit g, consumed one per group
    __m256i isum = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = Load256(x[b].qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, m4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if constexpr (kFiveBit) {
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit4));
        hbits = _mm256_srli_epi16(hbits, 2);
      }
      const __m256i p_lo = _mm256_maddubs_epi16(lo, Load256(y[b].qs + 64 * c));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, Load256(y[b].qs + 64 * c + 32));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p_lo, _mm256_set1_epi16(sc[2 * c])));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p_hi, _mm256_set1_epi16(sc[2 * c + 1])));
    }
    const float yd = y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(Half(x[b].d) * yd), _mm256_cvtepi32_ps(isum), acc);
    acc_min =
        _mm256_fmadd_ps(_mm256_set1_ps(Half(x[b].dmin) * yd), _mm256_cvtepi32_ps(min_sum), acc_min);
  }
  return HsumF32(acc) - HsumF32(acc_min);
}

float DotQ6_K(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const __m128i sc = Load128(x[b].scales);
    // q is stored as q + 32 in [0, 63] (unsigned, so VPMADDUBSW applies):
    // sum sc * (q+32 - 32) * a = sum sc * (q+32) * a - 32 * sum_g sc_g * bsums_g.
    const __m256i correction = _mm256_madd_epi16(Bsums(y[b]), _mm256_cvtepi8_epi16(sc));
    __m256i isum = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(correction, 5));
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = Load256(x[b].ql + 64 * h);
      const __m256i ql1 = Load256(x[b].ql + 64 * h + 32);
      const __m256i qh = Load256(x[b].qh + 32 * h);
      // High bits 2k..2k+1 of qh go to bits 4..5 of element chunk k.
      const __m256i v[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, m4),
                          _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
          _mm256_or_si256(_mm256_and_si256(ql1, m4),
                          _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                          _mm256_and_si256(qh, m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                          _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)),
      };
      for (int k = 0; k < 4; ++k) {
        const __m256i p = _mm256_maddubs_epi16(v[k], Load256(y[b].qs + 128 * h + 32 * k));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, GroupPairScales(sc, 4 * h + k)));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(Half(x[b].d) * y[b].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return HsumF32(acc);
}

// IQ4_XS: two sub-blocks per step, each pair of products scaled by its
// (ls - 32) in VPMADDWD (|sum| <= 2 * 32 * 32258), i32 sums over the
// super-block, one multiply by d * y.d (the reference's order of operations
// inside a super-block; only the sum over super-blocks is in 8 lanes).
float DotIq4Xs(int64_t n, const void* w, const void* a) {
  const BlockIq4Xs* x = static_cast<const BlockIq4Xs*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    __m256i isum = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i q = Iq4Values32(x[b].qs + 16 * ib);
      const __m256i a8 = Load256(y[b].qs + 32 * ib);
      const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a8, q));
      const __m256i sc = _mm256_set1_epi16(static_cast<int16_t>(Iq4XsScale(x[b], ib)));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, sc));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(Half(x[b].d) * y[b].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return HsumF32(acc);
}

}  // namespace

VecDotFn Avx2VecDot(quant::TensorType weight) {
  using T = quant::TensorType;
  switch (weight) {
    case T::kF32:
      return DotF32;
    case T::kF16:
      return DotF16;
    case T::kBF16:
      return DotBF16;
    case T::kQ8_0:
      return Dot32<SignedWeightKernel<BlockQ8_0>, BlockQ8_0, BlockQ8_0>;
    case T::kQ4_0:
      return Dot32<SignedWeightKernel<BlockQ4_0>, BlockQ4_0, BlockQ8_0>;
    case T::kQ5_0:
      return Dot32<SignedWeightKernel<BlockQ5_0>, BlockQ5_0, BlockQ8_0>;
    case T::kQ4_1:
      return Dot32<Q4_1Kernel, BlockQ4_1, BlockQ8_1>;
    case T::kQ5_1:
      return Dot32<Q5_1Kernel, BlockQ5_1, BlockQ8_1>;
    case T::kQ2_K:
      return DotQ2_K;
    case T::kQ3_K:
      return DotQ3_K;
    case T::kQ4_K:
      return DotK4<BlockQ4_K, false>;
    case T::kQ5_K:
      return DotK4<BlockQ5_K, true>;
    case T::kQ6_K:
      return DotQ6_K;
    case T::kIQ4_NL:
      return Dot32<SignedWeightKernel<BlockIq4Nl>, BlockIq4Nl, BlockQ8_0>;
    case T::kIQ4_XS:
      return DotIq4Xs;
    default:
      return nullptr;
  }
}

VecDot4Fn Avx2VecDot4(quant::TensorType weight) {
  using T = quant::TensorType;
  switch (weight) {
    case T::kQ8_0:
      return Dot32x4<BlockQ8_0>;
    case T::kQ4_0:
      return Dot32x4<BlockQ4_0>;
    case T::kQ5_0:
      return Dot32x4<BlockQ5_0>;
    case T::kIQ4_NL:
      return Dot32x4<BlockIq4Nl>;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

#else  // !defined(__x86_64__)

namespace ellm::kernels::internal {
VecDotFn Avx2VecDot(quant::TensorType) { return nullptr; }
VecDot4Fn Avx2VecDot4(quant::TensorType) { return nullptr; }
}  // namespace ellm::kernels::internal

#endif  // defined(__x86_64__)

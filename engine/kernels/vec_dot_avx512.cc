// AVX-512 VNNI dot products of one weight row with one activation row (the
// matrix x vector path of weights that are not repacked: the tied Q8_0
// output matrix of Gemma, and every type the packed GEMM has no layout for).
// Same math as vec_dot_ref.cc: exact integer sums inside a block, float
// accumulation across blocks; only the order of the float additions differs
// (16 lanes, then a horizontal sum), as in the AVX2 file.
//
// One ZMM holds two 32-byte chunks, so VPDPBUSD adds 4 u8 x i8 products per
// i32 lane for two blocks (or two groups) at once, straight into i32: no
// VPMADDUBSW i16 stage, so no saturation bound to respect (sums stay below
// 2^31: at most 256 * 255 * 127 per group times a 6- or 8-bit scale).
// Signed x signed blocks use |w| as unsigned and a with w's sign, which is
// exact because no activation byte is -128 (every encoder in quant.h keeps
// Q8 quants in [-127, 127]).
//
// A row's odd last block (32-element formats) runs as a pair whose upper
// half is zero in both the quants and the scale, so the upper lanes add
// exactly 0. VecDot4 repeats the single-row kernel's operations per row, so
// its results equal it bit for bit (the VecDot4Fn contract).
#include "kernels/vec_dot_isa.h"

#include "kernels/avx512_intrin.h"
#include "kernels/isa_target.h"

#if defined(ELLM_AVX512_VNNI_KERNELS)

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

ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)

namespace ellm::kernels::internal {
namespace {

using namespace ellm::quant;  // NOLINT(build/namespaces): block types

inline float Half(uint16_t h) { return _cvtsh_ss(h); }

inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m512i Load512(const void* p) { return _mm512_loadu_si512(p); }
// Two 32-byte chunks: p0 in the low half, p1 in the high half.
inline __m512i Join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// s0 in lanes 0..7, s1 in lanes 8..15.
inline __m512 Scales2(float s0, float s1) {
  return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

inline float HsumF32(__m512 v) {
  // Fixed tree (halves, then the AVX2 file's 8-lane sum): the same order for
  // every caller, which VecDot4's bit-equality relies on.
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline float HsumF32(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Sums of four adjacent signed x signed byte products, as 16 x i32.
// REQUIRES: no byte of a is -128.
inline __m512i DotI8I8(__m512i w, __m512i a) {
  const __m512i a_signed =
      _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), a_signed);
}
inline __m512i DotU8I8(__m512i u, __m512i s) {
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
}

// 16 packed nibbles of each of two blocks -> 64 bytes: block 0's low
// nibbles, its high nibbles, then block 1's (the element order of
// Q4_0/Q4_1/Q5_0/Q5_1 blocks).
inline __m512i Nibbles2x32(const uint8_t* p0, const uint8_t* p1) {
  const __m512i v =
      Join(_mm256_broadcastsi128_si256(Load128(p0)), _mm256_broadcastsi128_si256(Load128(p1)));
  // 128-bit lanes 1 and 3 take the high nibbles.
  const __m512i picked = _mm512_mask_blend_epi8(0xffff0000ffff0000ull, v, _mm512_srli_epi16(v, 4));
  return _mm512_and_si512(picked, _mm512_set1_epi8(0x0f));
}
// Bit j of each block's little-endian u32 -> byte mask bit j (block 0) and
// 32 + j (block 1).
inline __mmask64 Bits2x32(const uint8_t* p0, const uint8_t* p1) {
  uint32_t b0, b1;
  std::memcpy(&b0, p0, sizeof(b0));
  std::memcpy(&b1, p1, sizeof(b1));
  return static_cast<__mmask64>(b0) | (static_cast<__mmask64>(b1) << 32);
}

// ---- plain floats: four 16-lane FMA accumulators, scalar tail ----

template <typename Rows>
float DotFloat(int64_t n, const Rows& rows) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(rows.X16(i), rows.Y16(i), acc0);
    acc1 = _mm512_fmadd_ps(rows.X16(i + 16), rows.Y16(i + 16), acc1);
    acc2 = _mm512_fmadd_ps(rows.X16(i + 32), rows.Y16(i + 32), acc2);
    acc3 = _mm512_fmadd_ps(rows.X16(i + 48), rows.Y16(i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(rows.X16(i), rows.Y16(i), acc0);
  float tail = 0.0f;
  for (; i < n; ++i) tail += rows.X(i) * rows.Y(i);
  return HsumF32(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3))) + tail;
}

struct F32Rows {
  const float* x;
  const float* y;
  __m512 X16(int64_t i) const { return _mm512_loadu_ps(x + i); }
  __m512 Y16(int64_t i) const { return _mm512_loadu_ps(y + i); }
  float X(int64_t i) const { return x[i]; }
  float Y(int64_t i) const { return y[i]; }
};

struct F16Rows {
  const uint16_t* x;
  const uint16_t* y;
  __m512 X16(int64_t i) const { return _mm512_cvtph_ps(Load256(x + i)); }
  __m512 Y16(int64_t i) const { return _mm512_cvtph_ps(Load256(y + i)); }
  float X(int64_t i) const { return Half(x[i]); }
  float Y(int64_t i) const { return Half(y[i]); }
};

struct BF16Rows {
  const uint16_t* x;
  const uint16_t* y;
  static __m512 Widen(const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(Load256(p)), 16));
  }
  static float One(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  __m512 X16(int64_t i) const { return Widen(x + i); }
  __m512 Y16(int64_t i) const { return Widen(y + i); }
  float X(int64_t i) const { return One(x[i]); }
  float Y(int64_t i) const { return One(y[i]); }
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

// ---- 32-element blocks against Q8_0 / Q8_1, two blocks per ZMM ----

// Signed weight bytes of blocks b and b + 1; with `two` false, block b
// alone and zeros in the upper half (a row's odd last block).
template <typename W>
__m512i SignedWeights(const W* x, int64_t b, bool two);

template <>
__m512i SignedWeights(const BlockQ8_0* x, int64_t b, bool two) {
  return Join(Load256(x[b].qs), two ? Load256(x[b + 1].qs) : _mm256_setzero_si256());
}
template <>
__m512i SignedWeights(const BlockQ4_0* x, int64_t b, bool two) {
  const __m512i q =
      _mm512_sub_epi8(Nibbles2x32(x[b].qs, x[two ? b + 1 : b].qs), _mm512_set1_epi8(8));
  return two ? q : _mm512_zextsi256_si512(_mm512_castsi512_si256(q));
}
template <>
__m512i SignedWeights(const BlockQ5_0* x, int64_t b, bool two) {
  const int64_t b1 = two ? b + 1 : b;
  // q - 16 where the fifth bit is clear, q itself where it is set.
  const __m512i nib = Nibbles2x32(x[b].qs, x[b1].qs);
  const __mmask64 set = Bits2x32(x[b].qh, x[b1].qh);
  const __m512i q = _mm512_mask_sub_epi8(nib, ~set, nib, _mm512_set1_epi8(16));
  return two ? q : _mm512_zextsi256_si512(_mm512_castsi512_si256(q));
}

// IQ4_NL: the table's values of the nibbles, by VPSHUFB.
inline __m512i Iq4Values2x32(const uint8_t* p0, const uint8_t* p1) {
  const __m512i table = _mm512_broadcast_i32x4(Load128(kIq4NlValues));
  return _mm512_shuffle_epi8(table, Nibbles2x32(p0, p1));
}
template <>
__m512i SignedWeights(const BlockIq4Nl* x, int64_t b, bool two) {
  const __m512i q = Iq4Values2x32(x[b].qs, x[two ? b + 1 : b].qs);
  return two ? q : _mm512_zextsi256_si512(_mm512_castsi512_si256(q));
}

inline __m512i ActBytes(const BlockQ8_0* y, int64_t b, bool two) {
  return Join(Load256(y[b].qs), two ? Load256(y[b + 1].qs) : _mm256_setzero_si256());
}

// One step of the signed formats: the pair (b, b + 1) or the lone block b.
template <typename W>
inline __m512 SignedPairTerm(const W* x, const BlockQ8_0* y, int64_t b, bool two, __m512 acc) {
  const __m512i ints = DotI8I8(SignedWeights(x, b, two), ActBytes(y, b, two));
  const float s0 = Half(x[b].d) * Half(y[b].d);
  const float s1 = two ? Half(x[b + 1].d) * Half(y[b + 1].d) : 0.0f;
  return _mm512_fmadd_ps(Scales2(s0, s1), _mm512_cvtepi32_ps(ints), acc);
}

// The order in which the signed formats visit a row's nb blocks: pairs
// (b, b + 1), pair p into accumulator p % 2, an odd last block as a lone
// half pair. step(b, two, k) folds blocks b (and b + 1 when `two`) into
// accumulator k. DotSigned32 and DotSigned32x4 both walk this way, which
// their bit-equality (the VecDot4Fn contract) rests on.
template <typename Step>
inline void ForEachBlockPair(int64_t nb, Step&& step) {
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    step(b, true, 0);
    step(b + 2, true, 1);
  }
  if (b + 2 <= nb) {
    step(b, true, 0);
    if (b + 2 < nb) step(b + 2, false, 1);
  } else if (b < nb) {
    step(b, false, 0);
  }
}

// Q8_0, Q4_0, Q5_0, IQ4_NL against Q8_0: pairs alternate between two accumulators.
template <typename W>
float DotSigned32(int64_t n, const void* wp, const void* ap) {
  const W* x = static_cast<const W*>(wp);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(ap);
  // Named registers, chosen by a branch: an array indexed at run time would
  // live on the stack, one store-forward per step.
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  ForEachBlockPair(n / 32, [&](int64_t b, bool two, int k) {
    if (k == 0) {
      acc0 = SignedPairTerm(x, y, b, two, acc0);
    } else {
      acc1 = SignedPairTerm(x, y, b, two, acc1);
    }
  });
  return HsumF32(_mm512_add_ps(acc0, acc1));
}

// SignedPairTerm for four activation rows: the weight pair is unpacked once.
template <typename W>
inline void SignedPairTerm4(const W* x, const BlockQ8_0* const y[4], int64_t b, bool two,
                            __m512 acc[4]) {
  const __m512i w = SignedWeights(x, b, two);
  const __m512i w_abs = _mm512_abs_epi8(w);
  const __mmask64 neg = _mm512_movepi8_mask(w);
  const float wd0 = Half(x[b].d);
  const float wd1 = two ? Half(x[b + 1].d) : 0.0f;
  for (int t = 0; t < 4; ++t) {
    const __m512i a = ActBytes(y[t], b, two);
    const __m512i a_signed = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
    const __m512i ints = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w_abs, a_signed);
    const float s0 = wd0 * Half(y[t][b].d);
    const float s1 = two ? wd1 * Half(y[t][b + 1].d) : 0.0f;
    acc[t] = _mm512_fmadd_ps(Scales2(s0, s1), _mm512_cvtepi32_ps(ints), acc[t]);
  }
}

template <typename W>
void DotSigned32x4(int64_t n, const void* wp, const void* ap, size_t a_stride, float* out) {
  const W* x = static_cast<const W*>(wp);
  const BlockQ8_0* y[4];
  for (int t = 0; t < 4; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(ap) + t * a_stride);
  }
  __m512 acc0[4], acc1[4];
  for (int t = 0; t < 4; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  ForEachBlockPair(n / 32, [&](int64_t b, bool two, int k) {
    SignedPairTerm4(x, y, b, two, k == 0 ? acc0 : acc1);
  });
  for (int t = 0; t < 4; ++t) out[t] = HsumF32(_mm512_add_ps(acc0[t], acc1[t]));
}

// Q4_1 and Q5_1 against Q8_1: unsigned quants, plus the blocks' m * s.
template <typename W, bool kFiveBit>
float DotOffset32(int64_t n, const void* wp, const void* ap) {
  const W* x = static_cast<const W*>(wp);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(ap);
  const int64_t nb = n / 32;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  float offset = 0.0f;
  for (int64_t b = 0; b < nb; b += 2) {
    const bool two = b + 1 < nb;
    const int64_t b1 = two ? b + 1 : b;
    __m512i q = Nibbles2x32(x[b].qs, x[b1].qs);
    if constexpr (kFiveBit) {
      q = _mm512_mask_add_epi8(q, Bits2x32(x[b].qh, x[b1].qh), q, _mm512_set1_epi8(16));
    }
    if (!two) q = _mm512_zextsi256_si512(_mm512_castsi512_si256(q));
    const __m512i a = Join(Load256(y[b].qs), two ? Load256(y[b1].qs) : _mm256_setzero_si256());
    const __m512i ints = DotU8I8(q, a);
    const float s0 = Half(x[b].d) * Half(y[b].d);
    const float s1 = two ? Half(x[b1].d) * Half(y[b1].d) : 0.0f;
    // Even pairs in acc0, odd ones in acc1 (b / 2 is the pair's index).
    __m512& acc = (b & 2) ? acc1 : acc0;
    acc = _mm512_fmadd_ps(Scales2(s0, s1), _mm512_cvtepi32_ps(ints), acc);
    offset += Half(x[b].m) * Half(y[b].s);
    if (two) offset += Half(x[b1].m) * Half(y[b1].s);
  }
  return HsumF32(_mm512_add_ps(acc0, acc1)) + offset;
}

// ---- K-quants against Q8_K ----

inline __m256i Bsums(const BlockQ8_K& y) { return Load256(y.bsums); }

// i32 lane l of the result = scales[base + l / 4]: the scale of each lane of
// a VPDPBUSD over four 16-element groups.
inline __m512i Scales16x4(__m512i scales_i32, int base) {
  const __m512i idx = _mm512_add_epi32(
      _mm512_set1_epi32(base), _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
  return _mm512_permutexvar_epi32(idx, scales_i32);
}
// i32 lane l = scales[base + l / 8]: two 32-element groups.
inline __m512i Scales32x2(__m512i scales_i32, int base) {
  const __m512i idx = _mm512_add_epi32(
      _mm512_set1_epi32(base), _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  return _mm512_permutexvar_epi32(idx, scales_i32);
}
// Per-16-bit-lane shift counts: `lo` in the low 256 bits, `hi` in the high.
inline __m512i Shifts(int lo, int hi) {
  return Join(_mm256_set1_epi16(static_cast<int16_t>(lo)),
              _mm256_set1_epi16(static_cast<int16_t>(hi)));
}

float DotQ2_K(int64_t n, const void* w, const void* a) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m512i m3 = _mm512_set1_epi8(3);
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const __m128i packed = Load128(x[b].scales);
    const __m128i sc = _mm_and_si128(packed, _mm_set1_epi8(0x0f));
    const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f));
    const __m256i min_sum = _mm256_madd_epi16(Bsums(y[b]), _mm256_cvtepu8_epi16(mins));
    const __m512i sc32 = _mm512_cvtepu8_epi32(sc);
    __m512i isum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m256i q256 = Load256(x[b].qs + 32 * h);
      const __m512i q = Join(q256, q256);
      for (int p = 0; p < 2; ++p) {  // element chunks 2p and 2p + 1 of this half
        const __m512i v = _mm512_and_si512(_mm512_srlv_epi16(q, Shifts(4 * p, 4 * p + 2)), m3);
        const __m512i dot = DotU8I8(v, Load512(y[b].qs + 128 * h + 64 * p));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, Scales16x4(sc32, 8 * h + 4 * p)));
      }
    }
    const float yd = y[b].d;
    acc = _mm512_fmadd_ps(_mm512_set1_ps(yd * Half(x[b].d)), _mm512_cvtepi32_ps(isum), acc);
    acc_min =
        _mm256_fmadd_ps(_mm256_set1_ps(yd * Half(x[b].dmin)), _mm256_cvtepi32_ps(min_sum), acc_min);
  }
  return HsumF32(acc) - HsumF32(acc_min);
}

float DotQ3_K(int64_t n, const void* w, const void* a) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m512i m3 = _mm512_set1_epi8(3);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    alignas(16) int8_t sc_bytes[16];
    UnpackQ3_KScales(x[b].scales, sc_bytes);
    const __m128i sc = Load128(sc_bytes);
    const __m512i sc32 = _mm512_cvtepi8_epi32(sc);
    // With q' = q + 4 in [0, 7] (unsigned, so VPDPBUSD applies):
    // sum sc * q * a = sum sc * q' * a - 4 * sum_g sc_g * bsums_g.
    const __m256i correction = _mm256_madd_epi16(Bsums(y[b]), _mm256_cvtepi8_epi16(sc));
    const __m256i hmask = Load256(x[b].hmask);  // bit 4h + j: chunk j of half h
    __m512i isum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m256i q256 = Load256(x[b].qs + 32 * h);
      const __m512i q = Join(q256, q256);
      for (int p = 0; p < 2; ++p) {
        const int j0 = 2 * p;
        __m512i v = _mm512_and_si512(_mm512_srlv_epi16(q, Shifts(2 * j0, 2 * j0 + 2)), m3);
        const __mmask32 hi0 =
            _mm256_test_epi8_mask(hmask, _mm256_set1_epi8(static_cast<char>(1 << (4 * h + j0))));
        const __mmask32 hi1 = _mm256_test_epi8_mask(
            hmask, _mm256_set1_epi8(static_cast<char>(1 << (4 * h + j0 + 1))));
        const __mmask64 high = static_cast<__mmask64>(hi0) | (static_cast<__mmask64>(hi1) << 32);
        v = _mm512_mask_add_epi8(v, high, v, _mm512_set1_epi8(4));
        const __m512i dot = DotU8I8(v, Load512(y[b].qs + 128 * h + 64 * p));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, Scales16x4(sc32, 8 * h + 4 * p)));
      }
    }
    // The correction's 8 lanes fold into the low half; the sum is the same.
    isum = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(_mm256_slli_epi32(correction, 2)));
    acc = _mm512_fmadd_ps(_mm512_set1_ps(Half(x[b].d) * y[b].d), _mm512_cvtepi32_ps(isum), acc);
  }
  return HsumF32(acc);
}

// UnpackK4Scales (quant/q4_k.h) with word operations: out[0..7] = scales,
// out[8..15] = mins (as in the AVX2 file).
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

// Q4_K and Q5_K: 8 groups of 32 with 6-bit scales and mins; one ZMM holds
// groups 2c (low nibbles of 32 bytes) and 2c + 1 (their high nibbles).
template <typename Block, bool kFiveBit>
float DotK4(int64_t n, const void* w, const void* a) {
  const Block* x = static_cast<const Block*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    alignas(16) uint8_t sc_m[16];  // 8 scales, then 8 mins
    UnpackK4ScalesInline(x[b].scales, sc_m);
    const __m128i scales_mins = _mm_load_si128(reinterpret_cast<const __m128i*>(sc_m));
    const __m512i sc32 = _mm512_cvtepu8_epi32(scales_mins);
    // Each min covers two bsums: duplicate the bytes, then widen to i16.
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    const __m256i min_sum = _mm256_madd_epi16(Bsums(y[b]), m16);
    __m256i qh;
    if constexpr (kFiveBit) qh = Load256(x[b].qh);  // bit g: element of group g
    __m512i isum = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m256i q256 = Load256(x[b].qs + 32 * c);
      const __m512i q = Join(q256, q256);
      __m512i v = _mm512_and_si512(_mm512_srlv_epi16(q, Shifts(0, 4)), m4);
      if constexpr (kFiveBit) {
        const __mmask32 h0 =
            _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c))));
        const __mmask32 h1 =
            _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1))));
        const __mmask64 high = static_cast<__mmask64>(h0) | (static_cast<__mmask64>(h1) << 32);
        v = _mm512_mask_add_epi8(v, high, v, _mm512_set1_epi8(16));
      }
      const __m512i dot = DotU8I8(v, Load512(y[b].qs + 64 * c));
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, Scales32x2(sc32, 2 * c)));
    }
    const float yd = y[b].d;
    acc = _mm512_fmadd_ps(_mm512_set1_ps(Half(x[b].d) * yd), _mm512_cvtepi32_ps(isum), acc);
    acc_min =
        _mm256_fmadd_ps(_mm256_set1_ps(Half(x[b].dmin) * yd), _mm256_cvtepi32_ps(min_sum), acc_min);
  }
  return HsumF32(acc) - HsumF32(acc_min);
}

float DotQ6_K(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const __m128i sc = Load128(x[b].scales);
    const __m512i sc32 = _mm512_cvtepi8_epi32(sc);
    // q is stored as q + 32 in [0, 63] (unsigned, so VPDPBUSD applies):
    // sum sc * (q+32 - 32) * a = sum sc * (q+32) * a - 32 * sum_g sc_g * bsums_g.
    const __m256i correction = _mm256_madd_epi16(Bsums(y[b]), _mm256_cvtepi8_epi16(sc));
    __m512i isum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      // Element chunks 0 and 1 of this half take the low nibbles of ql's
      // 64 bytes, chunks 2 and 3 the high ones; chunk k's two high bits are
      // bits 2k..2k+1 of qh.
      const __m512i ql = Load512(x[b].ql + 64 * h);
      const __m256i qh256 = Load256(x[b].qh + 32 * h);
      const __m512i qh = Join(qh256, qh256);
      const __m512i v01 = _mm512_or_si512(
          _mm512_and_si512(ql, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, Shifts(4, 2)), m30));
      const __m512i v23 =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                          _mm512_and_si512(_mm512_srlv_epi16(qh, Shifts(0, 2)), m30));
      const __m512i d01 = DotU8I8(v01, Load512(y[b].qs + 128 * h));
      const __m512i d23 = DotU8I8(v23, Load512(y[b].qs + 128 * h + 64));
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(d01, Scales16x4(sc32, 8 * h)));
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(d23, Scales16x4(sc32, 8 * h + 4)));
    }
    isum = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(_mm256_slli_epi32(correction, 5)));
    acc = _mm512_fmadd_ps(_mm512_set1_ps(Half(x[b].d) * y[b].d), _mm512_cvtepi32_ps(isum), acc);
  }
  return HsumF32(acc);
}

// IQ4_XS: sub-blocks 2c and 2c + 1 per ZMM, each lane's dot times its
// sub-block's ls - 32 (VPMULLD), i32 sums over the super-block.
float DotIq4Xs(int64_t n, const void* w, const void* a) {
  const BlockIq4Xs* x = static_cast<const BlockIq4Xs*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kQkK; ++b) {
    __m512i isum = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const __m512i q = Iq4Values2x32(x[b].qs + 32 * c, x[b].qs + 32 * c + 16);
      const __m512i dot = DotI8I8(q, Load512(y[b].qs + 64 * c));
      const __m512i sc = Join(_mm256_set1_epi32(Iq4XsScale(x[b], 2 * c)),
                              _mm256_set1_epi32(Iq4XsScale(x[b], 2 * c + 1)));
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, sc));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(Half(x[b].d) * y[b].d), _mm512_cvtepi32_ps(isum), acc);
  }
  return HsumF32(acc);
}

}  // namespace

VecDotFn Avx512VecDot(quant::TensorType weight) {
  using T = quant::TensorType;
  switch (weight) {
    case T::kF32:
      return DotF32;
    case T::kF16:
      return DotF16;
    case T::kBF16:
      return DotBF16;
    case T::kQ8_0:
      return DotSigned32<BlockQ8_0>;
    case T::kQ4_0:
      return DotSigned32<BlockQ4_0>;
    case T::kQ5_0:
      return DotSigned32<BlockQ5_0>;
    case T::kQ4_1:
      return DotOffset32<BlockQ4_1, false>;
    case T::kQ5_1:
      return DotOffset32<BlockQ5_1, true>;
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
      return DotSigned32<BlockIq4Nl>;
    case T::kIQ4_XS:
      return DotIq4Xs;
    default:
      return nullptr;
  }
}

VecDot4Fn Avx512VecDot4(quant::TensorType weight) {
  using T = quant::TensorType;
  switch (weight) {
    case T::kQ8_0:
      return DotSigned32x4<BlockQ8_0>;
    case T::kQ4_0:
      return DotSigned32x4<BlockQ4_0>;
    case T::kQ5_0:
      return DotSigned32x4<BlockQ5_0>;
    case T::kIQ4_NL:
      return DotSigned32x4<BlockIq4Nl>;
    default:
      return nullptr;
  }
}

}  // namespace ellm::kernels::internal

ELLM_ISA_END

#else  // no AVX-512 VNNI in this compiler's target

namespace ellm::kernels::internal {
VecDotFn Avx512VecDot(quant::TensorType) { return nullptr; }
VecDot4Fn Avx512VecDot4(quant::TensorType) { return nullptr; }
}  // namespace ellm::kernels::internal

#endif

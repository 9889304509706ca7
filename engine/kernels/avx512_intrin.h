// The intrinsics of the AVX-512 kernel files (*_avx512.cc), and whether this
// translation unit builds them.
//
// Normally these are <immintrin.h>'s, used inside the file's target region
// (isa_target.h: the file itself is compiled for x86-64-v3). A test build
// defines ELLM_AVX512_EMULATED and compiles the same files against SIMDe's
// portable AVX-512 (Debian's libsimde-dev), which runs on any AVX2 machine:
// the kernels' logic (every lane, tail and mask) is then tested bit for bit
// on machines without AVX-512, not only where the CPU has it. The emulated
// build is never linked into the product (tests/CMakeLists.txt).
//
// SIMDe 0.7.4 (bookworm) lacks a few intrinsics the kernels use; they are
// defined below from two 256-bit halves, each with the instruction's
// documented lane semantics (Intel SDM).
//
// Defines, for the including file:
//   ELLM_AVX512_KERNELS      F, BW, DQ, VL available (attn_tile_avx512*.cc)
//   ELLM_AVX512_VNNI_KERNELS the same plus VNNI (gemm_packed, vec_dot)
//   ELLM_DOT_BF16_PAIRS      VDPBF16PS (or its emulation), in functions
//                            marked ELLM_TARGET_AVX512_BF16
// and KeepInRegister(v) (a no-op when emulated) and, with VNNI,
// DpbusdBcast(acc, w, p) (VPDPBUSD against 4 bytes broadcast from p), for
// code in ellm::kernels::internal.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstdint>

#include "kernels/isa_target.h"

#if defined(ELLM_AVX512_EMULATED)

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <cstdint>

namespace ellm::kernels::emulated {

using M512 = simde__m512;
using M512i = simde__m512i;

inline simde__m512i JoinI(simde__m256i lo, simde__m256i hi) {
  simde__m512i_private r;
  r.m256i[0] = lo;
  r.m256i[1] = hi;
  return simde__m512i_from_private(r);
}
inline simde__m512 JoinF(simde__m256 lo, simde__m256 hi) {
  simde__m512_private r;
  r.m256[0] = lo;
  r.m256[1] = hi;
  return simde__m512_from_private(r);
}
inline simde__m256i HalfI(simde__m512i a, int i) { return simde__m512i_to_private(a).m256i[i]; }
inline simde__m256 HalfF(simde__m512 a, int i) { return simde__m512_to_private(a).m256[i]; }

inline simde__m512 cvtepi32_ps(simde__m512i a) {
  return JoinF(_mm256_cvtepi32_ps(HalfI(a, 0)), _mm256_cvtepi32_ps(HalfI(a, 1)));
}
inline simde__m512i cvtepi8_epi32(__m128i a) {
  return JoinI(_mm256_cvtepi8_epi32(a), _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)));
}
inline simde__m512i cvtepu8_epi32(__m128i a) {
  return JoinI(_mm256_cvtepu8_epi32(a), _mm256_cvtepu8_epi32(_mm_srli_si128(a, 8)));
}
inline simde__m512i cvtepu16_epi32(__m256i a) {
  return JoinI(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(a)),
               _mm256_cvtepu16_epi32(_mm256_extracti128_si256(a, 1)));
}
inline simde__m512i cvtepu8_epi16(__m256i a) {
  return JoinI(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(a)),
               _mm256_cvtepu8_epi16(_mm256_extracti128_si256(a, 1)));
}
inline simde__m512 cvtph_ps(__m256i a) {
  return JoinF(_mm256_cvtph_ps(_mm256_castsi256_si128(a)),
               _mm256_cvtph_ps(_mm256_extracti128_si256(a, 1)));
}
inline simde__m256 extractf32x8_ps(simde__m512 a, int i) { return HalfF(a, i & 1); }
inline simde__m512i srai_epi32(simde__m512i a, int n) {
  return JoinI(_mm256_srai_epi32(HalfI(a, 0), n), _mm256_srai_epi32(HalfI(a, 1), n));
}
inline simde__m512i zextsi256_si512(__m256i a) { return JoinI(a, _mm256_setzero_si256()); }
// Bit i set where byte i of a & b is not zero.
inline uint32_t test_epi8_mask(__m256i a, __m256i b) {
  const __m256i zero = _mm256_cmpeq_epi8(_mm256_and_si256(a, b), _mm256_setzero_si256());
  return ~static_cast<uint32_t>(_mm256_movemask_epi8(zero));
}
inline void mask_storeu_ps(float* p, unsigned k, __m128 a) {
  alignas(16) float v[4];
  _mm_store_ps(v, a);
  for (int i = 0; i < 4; ++i) {
    if ((k >> i) & 1) p[i] = v[i];
  }
}
inline simde__m512i cvtps_epi32(simde__m512 a) {
  return JoinI(_mm256_cvtps_epi32(HalfF(a, 0)), _mm256_cvtps_epi32(HalfF(a, 1)));
}
// Lanes whose mask bit is clear are neither read nor written.
inline simde__m512 maskz_loadu_ps(unsigned k, const float* p) {
  alignas(64) float v[16] = {};
  for (int i = 0; i < 16; ++i) {
    if ((k >> i) & 1) v[i] = p[i];
  }
  return JoinF(_mm256_load_ps(v), _mm256_load_ps(v + 8));
}
inline void mask512_storeu_ps(float* p, unsigned k, simde__m512 a) {
  alignas(64) float v[16];
  _mm256_store_ps(v, HalfF(a, 0));
  _mm256_store_ps(v + 8, HalfF(a, 1));
  for (int i = 0; i < 16; ++i) {
    if ((k >> i) & 1) p[i] = v[i];
  }
}

// VPMOVDW: each 32-bit lane's low 16 bits, in order.
inline __m256i cvtepi32_epi16(simde__m512i a) {
  alignas(32) int32_t in[16];
  alignas(32) int16_t out[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(in), HalfI(a, 0));
  _mm256_store_si256(reinterpret_cast<__m256i*>(in + 8), HalfI(a, 1));
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int16_t>(in[i]);
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(out));
}

}  // namespace ellm::kernels::emulated

// The kernels' spelling, bound to the definitions above. GCC's headers may
// define some of these names as macros (the immediate-operand forms).
#undef _mm512_cvtepi32_ps
#undef _mm512_cvtepi8_epi32
#undef _mm512_cvtepu8_epi32
#undef _mm512_cvtepu16_epi32
#undef _mm512_cvtepu8_epi16
#undef _mm512_cvtph_ps
#undef _mm512_extractf32x8_ps
#undef _mm512_srai_epi32
#undef _mm512_zextsi256_si512
#undef _mm256_test_epi8_mask
#undef _mm_mask_storeu_ps
#undef _mm512_cvtps_epi32
#undef _mm512_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16 ::ellm::kernels::emulated::cvtepi32_epi16
#define _mm512_cvtepi32_ps ::ellm::kernels::emulated::cvtepi32_ps
#define _mm512_cvtepi8_epi32 ::ellm::kernels::emulated::cvtepi8_epi32
#define _mm512_cvtepu8_epi32 ::ellm::kernels::emulated::cvtepu8_epi32
#define _mm512_cvtepu16_epi32 ::ellm::kernels::emulated::cvtepu16_epi32
#define _mm512_cvtepu8_epi16 ::ellm::kernels::emulated::cvtepu8_epi16
#define _mm512_cvtph_ps ::ellm::kernels::emulated::cvtph_ps
#define _mm512_extractf32x8_ps ::ellm::kernels::emulated::extractf32x8_ps
#define _mm512_srai_epi32 ::ellm::kernels::emulated::srai_epi32
#define _mm512_zextsi256_si512 ::ellm::kernels::emulated::zextsi256_si512
#define _mm256_test_epi8_mask ::ellm::kernels::emulated::test_epi8_mask
#define _mm_mask_storeu_ps ::ellm::kernels::emulated::mask_storeu_ps
#define _mm512_cvtps_epi32 ::ellm::kernels::emulated::cvtps_epi32
#define _mm512_maskz_loadu_ps ::ellm::kernels::emulated::maskz_loadu_ps
#define _mm512_mask_storeu_ps ::ellm::kernels::emulated::mask512_storeu_ps
// SIMDe 0.7.4 spells this alias with four parameters (a copy of the masked
// form's); the function itself is right.
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)
// SIMDe 0.7.4 has the function but no native alias.
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm8) simde_mm512_shuffle_f32x4(a, b, imm8)

// VDPBF16PS on two 256-bit halves, each lane its odd pair's product and
// then its even pair's (exact products, one f32 rounding each): the
// instruction's bits when the caller runs under FlushDenormalsScope, as the
// kernel that uses it does (its DAZ and FTZ come from MXCSR here).
namespace ellm::kernels::emulated {
inline simde__m256 DotBf16Half(simde__m256 acc, simde__m256i a, simde__m256i b) {
  const simde__m256i hi = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(a, hi)),
                        _mm256_castsi256_ps(_mm256_and_si256(b, hi)), acc);
  return _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)),
                         _mm256_castsi256_ps(_mm256_slli_epi32(b, 16)), acc);
}
inline simde__m512 DotBf16Pairs(simde__m512 acc, simde__m512i a, simde__m512i b) {
  return JoinF(DotBf16Half(HalfF(acc, 0), HalfI(a, 0), HalfI(b, 0)),
               DotBf16Half(HalfF(acc, 1), HalfI(a, 1), HalfI(b, 1)));
}
}  // namespace ellm::kernels::emulated
#define ELLM_DOT_BF16_PAIRS ::ellm::kernels::emulated::DotBf16Pairs
#define ELLM_TARGET_AVX512_BF16
#define ELLM_AVX512_BF16_EMULATED 1
namespace ellm::kernels {
inline void KeepInRegister(simde__m512&) {}  // a hint for the real build only
inline simde__m512i DpbusdBcast(simde__m512i acc, simde__m512i w, const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return simde_mm512_dpbusd_epi32(acc, w, simde_mm512_set1_epi32(v));
}
}  // namespace ellm::kernels

#define ELLM_AVX512_KERNELS 1
#define ELLM_AVX512_VNNI_KERNELS 1

#else  // the real instructions

#if defined(__x86_64__)
// Built on every x86-64 compiler: the kernel files compile their kernels in
// a target region (isa_target.h), not with wider -m flags for the whole file.
#define ELLM_AVX512_KERNELS 1
#define ELLM_AVX512_VNNI_KERNELS 1
// Functions using VDPBF16PS carry this target (no region includes BF16)
// and run only where HostCpu().avx512bf16.
#define ELLM_TARGET_AVX512_BF16 ELLM_ISA_FUNCTION(ELLM_ISA_AVX512_BF16)
// The helpers below have internal linkage and their own target: they are
// defined ahead of any region, in every file that includes this header, and
// are reached only from the kernels (scripts/check-isa).
namespace ellm::kernels::internal {
namespace {  // NOLINT(build/namespaces_headers): see above
ELLM_TARGET_AVX512_BF16 inline __m512 DotBf16Pairs(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}
// Makes v's value opaque to the compiler, so that a vector loaded once is
// used from its register instead of the load being repeated as a memory
// operand of every instruction that reads it (GCC 12 does that to save
// registers, which can leave a loop bound by its loads). No instruction.
ELLM_ISA_FUNCTION(ELLM_ISA_AVX512) inline void KeepInRegister(__m512& v) { asm("" : "+v"(v)); }
// acc + VPDPBUSD(w, the 4 bytes at p in every dword lane), the bytes read
// as the instruction's embedded broadcast ({1to16}): one instruction where
// GCC 12 emits a separate VPBROADCASTD for _mm512_set1_epi32 of a load.
ELLM_ISA_FUNCTION(ELLM_ISA_AVX512_VNNI)
inline __m512i DpbusdBcast(__m512i acc, __m512i w, const void* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*static_cast<const int32_t*>(p)));
  return acc;
}
}  // namespace
}  // namespace ellm::kernels::internal
#define ELLM_DOT_BF16_PAIRS ::ellm::kernels::internal::DotBf16Pairs
#endif

#endif  // ELLM_AVX512_EMULATED

#if defined(ELLM_AVX512_KERNELS) && defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers build "undefined" vectors from self-initialised
// locals and then warn about them once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

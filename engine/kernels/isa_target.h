// How a kernel file compiles code for an instruction set wider than the
// product's baseline (x86-64-v3) without that code reaching anyone else.
//
// Every file of ellm, kernels included, is compiled for x86-64-v3. A kernel
// file opens a target region after its last #include and closes it at its
// end:
//
//   #include <algorithm>                  // everything generic first
//   #include "kernels/avx512_intrin.h"
//   #if defined(ELLM_AVX512_VNNI_KERNELS)
//   ELLM_ISA_BEGIN(ELLM_ISA_AVX512_VNNI)
//   #include "kernels/gemm_packed_avx512_common.h"  // ISA-private only
//   namespace ellm::kernels::internal { ... }
//   ELLM_ISA_END
//   #endif
//
// Only functions defined inside the region get the wider target. Templates
// and inline functions defined before it (the standard library, quant/,
// gemm_packed_isa.h) keep the baseline even when the region instantiates
// them, so the copy of std::vector<T>::resize the linker keeps for the whole
// program can never hold AVX-512 (issue 59: it did, when these files were
// compiled with -mavx512* flags, and an AVX2 CPU died of SIGILL in a test
// that merely resized a vector).
//
// Inside the region: internal linkage only (an anonymous namespace, as the
// ISA-private headers have), apart from the entry points the dispatch table
// stores, which live in ellm::kernels::internal; no captureless lambda taking
// or returning a vector (GCC emits its function-pointer thunk without the
// region's target); no #include of a generic header that was not already
// included above. scripts/check-isa, run on every build by scripts/test,
// holds every binary to this.
//
// The emulated test builds (ELLM_AVX512_EMULATED: SIMDe in place of the
// instructions) compile the same files for the baseline: the region is then
// empty.
#pragma once

// The target of each level (GCC's and clang's target attribute syntax).
#define ELLM_ISA_AVX512 "avx512f,avx512bw,avx512dq,avx512vl"
#define ELLM_ISA_AVX512_VNNI "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"
#define ELLM_ISA_AVX512_BF16 "avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"
#define ELLM_ISA_AMX "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,amx-tile,amx-int8,amx-bf16"

#define ELLM_ISA_PRAGMA(...) _Pragma(#__VA_ARGS__)

#if defined(ELLM_AVX512_EMULATED) || !defined(__x86_64__)
#define ELLM_ISA_BEGIN(isa)
#define ELLM_ISA_END
#define ELLM_ISA_FUNCTION(isa)
#elif defined(__clang__)
#define ELLM_ISA_BEGIN(isa) \
  ELLM_ISA_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define ELLM_ISA_END ELLM_ISA_PRAGMA(clang attribute pop)
#define ELLM_ISA_FUNCTION(isa) __attribute__((target(isa)))
#else
#define ELLM_ISA_BEGIN(isa) ELLM_ISA_PRAGMA(GCC push_options) ELLM_ISA_PRAGMA(GCC target(isa))
#define ELLM_ISA_END ELLM_ISA_PRAGMA(GCC pop_options)
// One function of a wider target outside a region (a header's helper).
#define ELLM_ISA_FUNCTION(isa) __attribute__((target(isa)))
#endif

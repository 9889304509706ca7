// The AMX intrinsics of the AMX kernel files (*_amx.cc), and whether this
// translation unit builds them.
//
// Normally these are <immintrin.h>'s, used inside the file's
// ELLM_ISA_BEGIN(ELLM_ISA_AMX) region (isa_target.h). A test build
// defines ELLM_AMX_EMULATED and compiles the same files against amx_emu.h,
// our software model of the tile instructions, and ELLM_AVX512_EMULATED for
// their AVX-512 parts (avx512_intrin.h): the AMX kernels then run, and are
// held to the same assertions, on machines without AMX or AVX-512.
//
// Defines ELLM_AMX_KERNELS when the AMX kernels are built (AMX-TILE,
// AMX-INT8, AMX-BF16 and the AVX-512 VNNI the epilogues use), and then
// AmxTileConfig, the tile config's layout.
#pragma once

#include "kernels/avx512_intrin.h"

#if defined(ELLM_AMX_EMULATED)

#include "kernels/amx_emu.h"
#if defined(ELLM_AVX512_VNNI_KERNELS)
#define ELLM_AMX_KERNELS 1
#endif

#elif defined(__x86_64__) && defined(ELLM_AVX512_VNNI_KERNELS)

#include <immintrin.h>
#define ELLM_AMX_KERNELS 1

#endif

#if defined(ELLM_AMX_KERNELS)
#include <cstdint>

namespace ellm::kernels {
// LDTILECFG's 64-byte memory operand (palette 1: tiles 0-7).
struct alignas(64) AmxTileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(AmxTileConfig) == 64);
}  // namespace ellm::kernels
#endif

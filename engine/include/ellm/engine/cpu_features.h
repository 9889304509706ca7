// What the CPU we run on can do, read once from CPUID (with the OS's consent
// for the wider registers). Kernel dispatch tables are filled from this; the
// env var ELLM_ISA=scalar|avx2|avx512|avx512vnni|amx caps it, so tests and
// benchmarks can force a slower path on a faster machine.
#pragma once

#include <string>

namespace ellm {

enum class IsaLevel {
  kScalar = 0,
  kAvx2 = 1,        // AVX2 + FMA + F16C (x86-64-v3): the release baseline
  kAvx512 = 2,      // F, BW, DQ, VL
  kAvx512Vnni = 3,  // + VNNI
  kAmx = 4,         // + AMX-TILE, AMX-INT8, and Linux's permission to use the tiles
};

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512vnni = false, avx512bf16 = false, avxvnni = false;
  bool amd = false;  // vendor AuthenticAMD
  // CPUID leaf 7 EDX bits 24, 25, 22.
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  // Linux lends the tile data state (XTILEDATA, 8 KiB) only to a process that
  // asks (arch_prctl ARCH_REQ_XCOMP_PERM); without it the first tile
  // instruction kills the process. HostCpu() asks once, before any kernel
  // runs, when the CPU has AMX and ELLM_ISA allows it; amx_permitted says it
  // was granted, amx_refused why not (empty when granted or never asked).
  bool amx_permitted = false;
  std::string amx_refused;

  // Whether bf16 pair dot products (VDPBF16PS) outrun f32 FMAs on the same
  // products here: AVX512_BF16 at an AVX-512 level, on AMD (Zen 4 and 5 run
  // it at twice the FMA's multiplies per cycle). Intel's Sapphire/Emerald
  // Rapids run it at most at the FMA's rate (measured: 39 vs 63 GMAC/s for
  // attention scores), and below AVX-512 it is emulated.
  bool FastBf16Dot() const;

  // Highest level both the CPU and ELLM_ISA allow.
  IsaLevel Level() const;
  // "avx2 fma f16c avx512f ... (using avx512vnni)", and why AMX is unused
  // where the CPU has it: "... (using avx512vnni; AMX refused: ...)".
  std::string ToString() const;
};

// Detected once, on first call (which also asks Linux for the AMX tile
// state, see amx_permitted); thread-safe.
const CpuFeatures& HostCpu();
const char* IsaLevelName(IsaLevel level);

}  // namespace ellm

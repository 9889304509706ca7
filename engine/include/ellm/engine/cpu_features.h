// What the CPU we run on can do, read once from CPUID (with the OS's consent
// for the wider registers). Kernel dispatch tables are filled from this; the
// env var ELLM_ISA=scalar|avx2|avx512|avx512vnni caps it, so tests and
// benchmarks can force a slower path on a faster machine.
#pragma once

#include <string>

namespace ellm {

enum class IsaLevel {
  kScalar = 0,
  kAvx2 = 1,        // AVX2 + FMA + F16C (x86-64-v3): the release baseline
  kAvx512 = 2,      // F, BW, DQ, VL
  kAvx512Vnni = 3,  // + VNNI
};

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512vnni = false, avx512bf16 = false, avxvnni = false;
  bool amd = false;  // vendor AuthenticAMD

  // Whether bf16 pair dot products (VDPBF16PS) outrun f32 FMAs on the same
  // products here: AVX512_BF16 at an AVX-512 level, on AMD (Zen 4 and 5 run
  // it at twice the FMA's multiplies per cycle). Intel's Sapphire/Emerald
  // Rapids run it at most at the FMA's rate (measured: 39 vs 63 GMAC/s for
  // attention scores), and below AVX-512 it is emulated.
  bool FastBf16Dot() const;

  // Highest level both the CPU and ELLM_ISA allow.
  IsaLevel Level() const;
  std::string ToString() const;  // "avx2 fma f16c avx512f ... (using avx512vnni)"
};

// Detected once, on first call; thread-safe.
const CpuFeatures& HostCpu();
const char* IsaLevelName(IsaLevel level);

}  // namespace ellm

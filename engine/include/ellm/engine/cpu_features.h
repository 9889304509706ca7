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

  // Highest level both the CPU and ELLM_ISA allow.
  IsaLevel Level() const;
  std::string ToString() const;  // "avx2 fma f16c avx512f ... (using avx512vnni)"
};

// Detected once, on first call; thread-safe.
const CpuFeatures& HostCpu();
const char* IsaLevelName(IsaLevel level);

}  // namespace ellm

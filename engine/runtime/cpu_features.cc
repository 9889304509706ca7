#include "ellm/engine/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace ellm {
namespace {

CpuFeatures Detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  // libgcc's checks include the XGETBV test that the OS saves the registers.
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = true;  // part of the x86-64-v3 baseline we compile for
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.amd = __builtin_cpu_is("amd");
  // AVX-VNNI (VEX-encoded, 256-bit) is CPUID leaf 7 sub-leaf 1, EAX bit 4;
  // read directly because not every compiler's __builtin_cpu_supports knows it.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) f.avxvnni = f.avx2 && (eax & (1u << 4)) != 0;
#endif
  return f;
}

IsaLevel EnvCap() {
  const char* cap = std::getenv("ELLM_ISA");
  if (cap == nullptr || *cap == '\0') return IsaLevel::kAvx512Vnni;
  if (std::strcmp(cap, "scalar") == 0) return IsaLevel::kScalar;
  if (std::strcmp(cap, "avx2") == 0) return IsaLevel::kAvx2;
  if (std::strcmp(cap, "avx512") == 0) return IsaLevel::kAvx512;
  return IsaLevel::kAvx512Vnni;
}

}  // namespace

IsaLevel CpuFeatures::Level() const {
  IsaLevel hw = IsaLevel::kScalar;
  if (avx2 && fma) hw = IsaLevel::kAvx2;
  if (hw == IsaLevel::kAvx2 && avx512f && avx512bw && avx512dq && avx512vl) hw = IsaLevel::kAvx512;
  if (hw == IsaLevel::kAvx512 && avx512vnni) hw = IsaLevel::kAvx512Vnni;
  IsaLevel cap = EnvCap();
  return static_cast<int>(cap) < static_cast<int>(hw) ? cap : hw;
}

bool CpuFeatures::FastBf16Dot() const {
  return avx512bf16 && amd && static_cast<int>(Level()) >= static_cast<int>(IsaLevel::kAvx512);
}

const char* IsaLevelName(IsaLevel level) {
  switch (level) {
    case IsaLevel::kScalar:
      return "scalar";
    case IsaLevel::kAvx2:
      return "avx2";
    case IsaLevel::kAvx512:
      return "avx512";
    case IsaLevel::kAvx512Vnni:
      return "avx512vnni";
  }
  return "unknown";
}

std::string CpuFeatures::ToString() const {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512dq, "avx512dq");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avxvnni, "avxvnni");
  add(amd, "amd");
  s += " (using ";
  s += IsaLevelName(Level());
  s += ")";
  return s;
}

const CpuFeatures& HostCpu() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace ellm

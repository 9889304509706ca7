#include "ellm/engine/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ellm {
namespace {

IsaLevel EnvCap();

#if defined(__x86_64__)
// Linux's arch_prctl codes for dynamically enabled XSAVE state (Linux 5.16+,
// arch/x86/include/uapi/asm/prctl.h) and the tile data's XSAVE component.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr unsigned kXfeatureXtileCfg = 17, kXfeatureXtileData = 18;

uint64_t Xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Asks Linux for the tile data state once per process, before any thread
// uses a tile (the permission then holds for every thread of the process).
// Returns "" when granted, else why not.
std::string RequestAmxPermission() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & (1u << 27)) == 0) {
    return "the OS does not enable XSAVE (no OSXSAVE)";
  }
  const uint64_t tiles = (1ull << kXfeatureXtileCfg) | (1ull << kXfeatureXtileData);
  if ((Xcr0() & tiles) != tiles) return "the OS does not enable the tile state in XCR0";
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) != 0) {
    const int err = errno;
    const char* why = err == EINVAL   ? "Linux before 5.16 does not lend it"
                      : err == ENOSPC ? "an alternate signal stack here is too small for it"
                                      : "a sandbox (seccomp, container) may forbid it";
    return std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: ") + std::strerror(err) +
           " (" + why + ")";
  }
  unsigned long granted = 0;  // NOLINT(runtime/int): the system call's type
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
      (granted & (1ul << kXfeatureXtileData)) == 0) {
    return "arch_prctl granted the tile state but ARCH_GET_XCOMP_PERM does not show it";
  }
  return "";
}
#endif

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
  // AMX: CPUID leaf 7 sub-leaf 0, EDX bits 22 (BF16), 24 (TILE), 25 (INT8);
  // GCC 12's __builtin_cpu_supports does not know them.
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    f.amx_bf16 = (edx & (1u << 22)) != 0;
    f.amx_tile = (edx & (1u << 24)) != 0;
    f.amx_int8 = (edx & (1u << 25)) != 0;
  }
  // Only a process that may use the tiles asks for them.
  if (f.amx_tile && f.amx_int8 && static_cast<int>(EnvCap()) >= static_cast<int>(IsaLevel::kAmx)) {
    f.amx_refused = RequestAmxPermission();
    f.amx_permitted = f.amx_refused.empty();
  }
#endif
  return f;
}

// ELLM_ISA; unset, empty or unknown: no cap.
IsaLevel EnvCap() {
  const char* cap = std::getenv("ELLM_ISA");
  if (cap == nullptr || *cap == '\0') return IsaLevel::kAmx;
  if (std::strcmp(cap, "scalar") == 0) return IsaLevel::kScalar;
  if (std::strcmp(cap, "avx2") == 0) return IsaLevel::kAvx2;
  if (std::strcmp(cap, "avx512") == 0) return IsaLevel::kAvx512;
  if (std::strcmp(cap, "avx512vnni") == 0) return IsaLevel::kAvx512Vnni;
  return IsaLevel::kAmx;
}

}  // namespace

IsaLevel CpuFeatures::Level() const {
  IsaLevel hw = IsaLevel::kScalar;
  if (avx2 && fma) hw = IsaLevel::kAvx2;
  if (hw == IsaLevel::kAvx2 && avx512f && avx512bw && avx512dq && avx512vl) hw = IsaLevel::kAvx512;
  if (hw == IsaLevel::kAvx512 && avx512vnni) hw = IsaLevel::kAvx512Vnni;
  if (hw == IsaLevel::kAvx512Vnni && amx_tile && amx_int8 && amx_permitted) hw = IsaLevel::kAmx;
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
    case IsaLevel::kAmx:
      return "amx";
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
  add(amx_tile, "amx_tile");
  add(amx_int8, "amx_int8");
  add(amx_bf16, "amx_bf16");
  add(amd, "amd");
  s += " (using ";
  s += IsaLevelName(Level());
  if (!amx_refused.empty()) {
    s += "; AMX refused: ";
    s += amx_refused;
  }
  s += ")";
  return s;
}

const CpuFeatures& HostCpu() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace ellm

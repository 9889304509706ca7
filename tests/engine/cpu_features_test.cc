#include "ellm/engine/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ellm {
namespace {

TEST(CpuFeatures, LevelIsConsistentWithFlags) {
  CpuFeatures f;
  EXPECT_EQ(f.Level(), IsaLevel::kScalar);
  f.avx2 = f.fma = true;
  unsetenv("ELLM_ISA");
  EXPECT_EQ(f.Level(), IsaLevel::kAvx2);
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = true;
  EXPECT_EQ(f.Level(), IsaLevel::kAvx512);
  f.avx512vnni = true;
  EXPECT_EQ(f.Level(), IsaLevel::kAvx512Vnni);
}

TEST(CpuFeatures, EnvironmentCapsTheLevel) {
  CpuFeatures f;
  f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vnni = true;
  setenv("ELLM_ISA", "avx2", 1);
  EXPECT_EQ(f.Level(), IsaLevel::kAvx2);
  setenv("ELLM_ISA", "scalar", 1);
  EXPECT_EQ(f.Level(), IsaLevel::kScalar);
  unsetenv("ELLM_ISA");
}

TEST(CpuFeatures, HostHasTheBaseline) {
  // Release binaries are built for x86-64-v3; a host without AVX2 could not run this test.
  EXPECT_TRUE(HostCpu().avx2);
  EXPECT_FALSE(HostCpu().ToString().empty());
}

}  // namespace
}  // namespace ellm

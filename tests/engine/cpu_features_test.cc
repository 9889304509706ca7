#include "ellm/engine/cpu_features.h"

#include "ellm/engine/engine.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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
  // AMX needs the CPU's tiles and int8 products and Linux's permission.
  f.amx_tile = f.amx_int8 = f.amx_bf16 = true;
  EXPECT_EQ(f.Level(), IsaLevel::kAvx512Vnni);
  f.amx_permitted = true;
  EXPECT_EQ(f.Level(), IsaLevel::kAmx);
  f.amx_int8 = false;
  EXPECT_EQ(f.Level(), IsaLevel::kAvx512Vnni);
}

TEST(CpuFeatures, RefusedAmxIsExplainedAndNotUsed) {
  unsetenv("ELLM_ISA");
  CpuFeatures f;
  f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vnni = true;
  f.amx_tile = f.amx_int8 = f.amx_bf16 = true;
  f.amx_refused = "arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: Invalid argument";
  EXPECT_EQ(f.Level(), IsaLevel::kAvx512Vnni);
  const std::string s = f.ToString();
  EXPECT_NE(s.find("amx_tile amx_int8 amx_bf16"), std::string::npos) << s;
  EXPECT_NE(s.find("(using avx512vnni; AMX refused: arch_prctl"), std::string::npos) << s;
  EXPECT_STREQ(IsaLevelName(IsaLevel::kAmx), "amx");
}

TEST(CpuFeatures, EnvironmentCapsTheLevel) {
  CpuFeatures f;
  f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vnni = true;
  setenv("ELLM_ISA", "avx2", 1);
  EXPECT_EQ(f.Level(), IsaLevel::kAvx2);
  setenv("ELLM_ISA", "scalar", 1);
  EXPECT_EQ(f.Level(), IsaLevel::kScalar);
  f.amx_tile = f.amx_int8 = f.amx_permitted = true;
  setenv("ELLM_ISA", "avx512vnni", 1);
  EXPECT_EQ(f.Level(), IsaLevel::kAvx512Vnni);
  setenv("ELLM_ISA", "amx", 1);
  EXPECT_EQ(f.Level(), IsaLevel::kAmx);
  setenv("ELLM_ISA", "something-else", 1);  // unknown: no cap
  EXPECT_EQ(f.Level(), IsaLevel::kAmx);
  unsetenv("ELLM_ISA");
  EXPECT_EQ(f.Level(), IsaLevel::kAmx);
}

// The tiles are used only where the CPU has them and Linux lent them; a
// refusal is explained.
TEST(CpuFeatures, HostUsesAmxOnlyWithThePermission) {
  const CpuFeatures& f = HostCpu();
  if (!f.amx_tile || !f.amx_int8) {
    EXPECT_FALSE(f.amx_permitted);
    EXPECT_TRUE(f.amx_refused.empty());
  }
  EXPECT_FALSE(f.amx_permitted && !f.amx_refused.empty());
  if (f.Level() == IsaLevel::kAmx) {
    EXPECT_TRUE(f.amx_permitted);
  }
  if (!f.amx_refused.empty()) {
    EXPECT_NE(f.ToString().find("AMX refused"), std::string::npos) << f.ToString();
  }
}

TEST(CpuFeatures, HostHasTheBaseline) {
  // Release binaries are built for x86-64-v3; a host without AVX2 could not run this test.
  EXPECT_TRUE(HostCpu().avx2);
  EXPECT_FALSE(HostCpu().ToString().empty());
}

// Pair dot products are chosen only where they are the faster: AMD with
// AVX512_BF16 at an AVX-512 level (not Intel, not capped below AVX-512).
TEST(CpuFeatures, FastBf16DotOnlyOnAmdWithAvx512Bf16) {
  unsetenv("ELLM_ISA");
  CpuFeatures f;
  f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512vnni = true;
  f.avx512bf16 = true;
  EXPECT_FALSE(f.FastBf16Dot());  // Intel (Sapphire/Emerald Rapids)
  f.amd = true;
  EXPECT_TRUE(f.FastBf16Dot());  // Zen 4 and 5
  setenv("ELLM_ISA", "avx2", 1);
  EXPECT_FALSE(f.FastBf16Dot());  // emulated below AVX-512
  unsetenv("ELLM_ISA");
  f.avx512bf16 = false;
  EXPECT_FALSE(f.FastBf16Dot());
}

TEST(CpuFeatures, AttnScoresNamesAndTheAutomaticChoice) {
  for (AttnScores s :
       {AttnScores::kAuto, AttnScores::kPairs, AttnScores::kF32, AttnScores::kTiles}) {
    auto back = ParseAttnScores(AttnScoresName(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(AttnScoresName(AttnScores::kTiles), "tiles");
  auto bad = ParseAttnScores("bf16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("auto, pairs, f32 or tiles"), std::string::npos);
  EXPECT_EQ(ResolveAttnScores(AttnScores::kPairs), AttnScores::kPairs);
  EXPECT_EQ(ResolveAttnScores(AttnScores::kF32), AttnScores::kF32);
  // Tiles are opt-in: named, they stay; auto never picks them.
  EXPECT_EQ(ResolveAttnScores(AttnScores::kTiles), AttnScores::kTiles);
  EXPECT_NE(ResolveAttnScores(AttnScores::kAuto), AttnScores::kTiles);
  unsetenv("ELLM_ISA");
  EXPECT_EQ(ResolveAttnScores(AttnScores::kAuto),
            HostCpu().FastBf16Dot() ? AttnScores::kPairs : AttnScores::kF32);
  setenv("ELLM_ISA", "avx2", 1);
  EXPECT_EQ(ResolveAttnScores(AttnScores::kAuto), AttnScores::kF32);
  unsetenv("ELLM_ISA");
}

TEST(CpuFeatures, OnlyABf16CacheUsesPairScores) {
  EXPECT_EQ(AttnScoresUsed(KvType::kBF16, AttnScores::kPairs), AttnScores::kPairs);
  EXPECT_EQ(AttnScoresUsed(KvType::kBF16, AttnScores::kF32), AttnScores::kF32);
  for (KvType t : {KvType::kF16, KvType::kF32, KvType::kQ8_0}) {
    EXPECT_EQ(AttnScoresUsed(t, AttnScores::kPairs), AttnScores::kF32) << KvTypeName(t);
    EXPECT_EQ(AttnScoresUsed(t, AttnScores::kAuto), AttnScores::kF32) << KvTypeName(t);
  }
  unsetenv("ELLM_ISA");
  EXPECT_EQ(AttnScoresUsed(KvType::kBF16, AttnScores::kAuto), ResolveAttnScores(AttnScores::kAuto));
}

}  // namespace
}  // namespace ellm

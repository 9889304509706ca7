// The vectorised activation kernels against their scalar references, bit for
// bit (they are exact operations), on ties, special values and tails.
#include "kernels/activations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "quant/fp16.h"

namespace ellm::kernels {
namespace {

const ActivationKernels& Ref() { return GetActivationKernelsAt(IsaLevel::kScalar); }
const ActivationKernels& Simd() { return GetActivationKernelsAt(IsaLevel::kAvx2); }

uint32_t Bits(float x) { return std::bit_cast<uint32_t>(x); }

TEST(ActivationKernels, QuantizeQ8_0WritesTheReferenceBytes) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 2);
  constexpr int kBlocks = 64;
  std::vector<float> x(32 * kBlocks);
  for (float& v : x) v = nd(rng);
  // Block 1: all zero (d = 0, id = 0). Block 2: amax 127, so x * id lands on
  // exact halves (ties must go away from zero, where nearest-even would
  // not). Block 3: one large value and tiny ones.
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  for (int j = 0; j < 32; ++j) x[64 + j] = (j % 2 ? -1.0f : 1.0f) * (0.5f + static_cast<float>(j));
  x[64] = 127.0f;
  for (int j = 0; j < 32; ++j) x[96 + j] = 1e-30f * static_cast<float>(j);
  x[96] = 3e4f;
  std::vector<quant::BlockQ8_0> want(kBlocks), got(kBlocks);
  Ref().quantize_q8_0(x.data(), want.data(), static_cast<int64_t>(x.size()));
  Simd().quantize_q8_0(x.data(), got.data(), static_cast<int64_t>(x.size()));
  for (int b = 0; b < kBlocks; ++b) {
    ASSERT_EQ(got[b].d, want[b].d) << "block " << b;
    for (int j = 0; j < 32; ++j) ASSERT_EQ(got[b].qs[j], want[b].qs[j]) << b << " " << j;
  }
  // The tie block really has ties: 2.5 -> 3 and -1.5 -> -2 (away from zero).
  EXPECT_EQ(want[2].qs[2], 3);
  EXPECT_EQ(want[2].qs[1], -2);
}

TEST(ActivationKernels, QuantizeQ8_KWritesTheReferenceBytes) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0, 2);
  constexpr int kBlocks = 16;
  std::vector<float> x(256 * kBlocks);
  for (float& v : x) v = nd(rng);
  // Block 1: all zero. Block 2: the largest magnitude twice, negative first
  // (the first one sets the sign of the scale). Block 3: x * iscale on exact
  // halves (nearest even: 2.5 -> 2, not 3). Block 4: one huge value, tiny
  // others. Block 5: the largest magnitude in the last lane.
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  x[512 + 40] = -9.0f;
  x[512 + 200] = 9.0f;
  for (int j = 0; j < 256; ++j) x[768 + j] = static_cast<float>(j % 64) - 31.5f;
  x[768] = -127.0f;
  for (int j = 0; j < 256; ++j) x[1024 + j] = 1e-30f * static_cast<float>(j);
  x[1024 + 7] = 3e4f;
  x[1280 + 255] = 50.0f;
  std::vector<quant::BlockQ8_K> want(kBlocks), got(kBlocks);
  Ref().quantize_q8_k(x.data(), want.data(), static_cast<int64_t>(x.size()));
  Simd().quantize_q8_k(x.data(), got.data(), static_cast<int64_t>(x.size()));
  for (int b = 0; b < kBlocks; ++b) {
    ASSERT_EQ(Bits(got[b].d), Bits(want[b].d)) << "block " << b;
    for (int j = 0; j < 256; ++j) ASSERT_EQ(got[b].qs[j], want[b].qs[j]) << b << " " << j;
    for (int g = 0; g < 16; ++g) ASSERT_EQ(got[b].bsums[g], want[b].bsums[g]) << b << " " << g;
  }
  // The cases are what they claim: the first of two equal magnitudes sets
  // the sign (d > 0 for -9 first: iscale = -127 / -9), and ties go to even.
  EXPECT_GT(want[2].d, 0.0f);
  EXPECT_EQ(want[2].qs[40], -127);
  // Block 3's iscale is -127 / -127 = 1: q = nearest-even(x).
  EXPECT_EQ(want[3].qs[1], -30);  // -30.5
  EXPECT_EQ(want[3].qs[2], -30);  // -29.5
  EXPECT_EQ(want[3].qs[3], -28);  // -28.5
}

TEST(ActivationKernels, GegluMatchesReferenceIncludingSaturationAndTails) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<uint16_t> table(1 << 16);
  for (uint32_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint16_t>(i * 2654435761u);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> ud(-14.0f, 14.0f);
  for (int n : {1, 7, 8, 9, 31, 640, 2051}) {
    std::vector<float> g(n), u(n), want(n), got(n);
    for (int i = 0; i < n; ++i) g[i] = ud(rng), u[i] = ud(rng);
    if (n > 4) g[0] = -10.0f, g[1] = 10.0f, g[2] = -9.999f, g[3] = 0.0f, g[4] = -0.0f;
    Ref().geglu_f16_table(table.data(), g.data(), u.data(), want.data(), n);
    Simd().geglu_f16_table(table.data(), g.data(), u.data(), got.data(), n);
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(Bits(got[i]), Bits(want[i])) << n << " " << i << " " << g[i];
    // In place, as the forward pass calls it.
    Simd().geglu_f16_table(table.data(), g.data(), u.data(), g.data(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(Bits(g[i]), Bits(want[i])) << n << " " << i;
  }
}

TEST(ActivationKernels, RoundingToF16AndBf16MatchesReference) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(9);
  std::vector<float> x;
  while (x.size() < 5000) {  // every finite bit pattern is as likely
    const uint32_t b = static_cast<uint32_t>(rng());
    if ((b & 0x7f800000u) != 0x7f800000u) x.push_back(std::bit_cast<float>(b));
  }
  for (int i = 0; i < 2000; ++i)
    x.push_back(
        std::ldexp(std::bit_cast<float>((static_cast<uint32_t>(rng()) & 0x807fffffu) | 0x3f800000u),
                   i % 40 - 26));
  // Exact ties of both formats, both parities, overflow, subnormals, zeros.
  for (uint32_t b :
       {0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, 0x477ff000u, 0x477fefffu, 0x7f7fffffu,
        0x00000001u, 0x33000000u, 0x80000000u, 0x00000000u, 0x7f800000u, 0xff800000u}) {
    x.push_back(std::bit_cast<float>(b));
  }
  for (int n : {1, 9, static_cast<int>(x.size())}) {
    std::vector<float> w16(n), g16(n), wb(n), gb(n);
    Ref().round_f16(x.data(), w16.data(), n);
    Simd().round_f16(x.data(), g16.data(), n);
    Ref().round_bf16(x.data(), wb.data(), n);
    Simd().round_bf16(x.data(), gb.data(), n);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(Bits(g16[i]), Bits(w16[i])) << std::hex << Bits(x[i]);
      ASSERT_EQ(Bits(gb[i]), Bits(wb[i])) << std::hex << Bits(x[i]);
    }
  }
}

// Greedy decoding's pick: the first largest logit, on every length's tail,
// with the maximum at each end, repeated (the lowest index wins), among
// infinities, and with NaNs (std::max_element's answer, whatever it is).
TEST(ActivationKernels, ArgMaxIsTheFirstLargestAsMaxElement) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 4);
  auto expect = [&](const std::vector<float>& x, const char* what) {
    const int64_t n = static_cast<int64_t>(x.size());
    const int64_t want = std::max_element(x.begin(), x.end()) - x.begin();
    EXPECT_EQ(Ref().argmax(x.data(), n), want) << what << " n=" << n;
    EXPECT_EQ(Simd().argmax(x.data(), n), want) << what << " n=" << n;
  };
  for (int64_t n : {1, 2, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 1000, 262144}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = nd(rng);
    expect(x, "random");
    x[static_cast<size_t>(n - 1)] = 100.0f;
    expect(x, "last");
    x[0] = 100.0f;
    expect(x, "first and last tie");
    if (n > 40) {
      x[0] = 0.0f;
      x[37] = 100.0f;  // ties at 37 and n - 1: 37
      expect(x, "tie in the middle");
      x[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::infinity();
      expect(x, "infinity");
      x[5] = std::numeric_limits<float>::quiet_NaN();
      expect(x, "NaN");
    }
    std::fill(x.begin(), x.end(), -std::numeric_limits<float>::infinity());
    expect(x, "all -inf");
  }
  // The answer the test expects for the middle tie really is the lowest.
  std::vector<float> y(64, 0.0f);
  y[40] = 1.0f;
  y[50] = 1.0f;
  EXPECT_EQ(Simd().argmax(y.data(), 64), 40);
}

}  // namespace
}  // namespace ellm::kernels

#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace ellm::ops {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(RmsNorm, MatchesDefinitionOnOddLength) {
  auto x = Random(641, 1, 3.0f), w = Random(641, 2);
  std::vector<float> y(641);
  RmsNorm(x.data(), w.data(), y.data(), 641, 1e-6f);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  double inv = 1.0 / std::sqrt(ss / 641 + 1e-6);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], x[i] * inv * w[i], 1e-5 * std::fabs(x[i] * inv * w[i]) + 1e-7);
  // In place gives the same answer.
  RmsNorm(x.data(), w.data(), x.data(), 641, 1e-6f);
  EXPECT_EQ(x, y);
}

TEST(RopeNeox, RotatesHalvesAndKeepsNorm) {
  const int hd = 256, heads = 2;
  auto x = Random(hd * heads, 3);
  auto orig = x;
  RopeNeox(x.data(), heads, hd, 0, 10000.0f, 1.0f);
  EXPECT_EQ(x, orig);  // position 0 is the identity
  RopeNeox(x.data(), heads, hd, 1234, 10000.0f, 1.0f);
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < hd / 2; ++i) {
      float a0 = orig[h * hd + i], a1 = orig[h * hd + i + hd / 2];
      float b0 = x[h * hd + i], b1 = x[h * hd + i + hd / 2];
      EXPECT_NEAR(a0 * a0 + a1 * a1, b0 * b0 + b1 * b1, 1e-4);
      // The angle for pair i: pos * base^(-2i/hd).
      double theta = 1234.0 * std::pow(10000.0, -2.0 * i / hd);
      double e0 = a0 * std::cos(theta) - a1 * std::sin(theta);
      // Incremental float theta drifts a little from the exact angle at large pos.
      EXPECT_NEAR(b0, e0, 2e-3 * (std::fabs(a0) + std::fabs(a1)) + 1e-5) << "pair " << i;
    }
  }
}

TEST(GeluTanh, FollowsTheTanhApproximationWithinF16Rounding) {
  for (float x = -12.0f; x <= 12.0f; x += 0.01f) {
    double exact = 0.5 * x * (1 + std::tanh(0.7978845608 * x * (1 + 0.044715 * x * x)));
    EXPECT_NEAR(GeluTanh(x), exact, 2e-3 * std::fabs(exact) + 2e-3) << x;
  }
  EXPECT_EQ(GeluTanh(-11.0f), 0.0f);
  EXPECT_EQ(GeluTanh(11.0f), 11.0f);
}

TEST(GeGlu, MultipliesGeluOfGateByUp) {
  auto g = Random(100, 4, 3.0f), u = Random(100, 5);
  std::vector<float> y(100);
  GeGlu(g.data(), u.data(), y.data(), 100);
  for (int i = 0; i < 100; ++i) EXPECT_FLOAT_EQ(y[i], GeluTanh(g[i]) * u[i]);
}

// SiLU through the vector exp: within a few ulp of the double-precision
// definition over the whole float range that matters (tails included), on a
// length past one 256-value chunk and not a multiple of 8, written in place.
TEST(SwiGlu, MatchesTheDefinitionInPlaceAcrossChunks) {
  constexpr int kN = 777;
  auto g = Random(kN, 6, 6.0f), u = Random(kN, 7);
  g[0] = -100.0f, g[1] = 100.0f, g[2] = -87.0f, g[3] = 0.0f, g[4] = -20.0f, g[5] = 30.0f;
  std::vector<float> y = g;
  SwiGlu(y.data(), u.data(), y.data(), kN);  // aliases gate
  for (int i = 0; i < kN; ++i) {
    const double x = g[i];
    const double exact = x / (1.0 + std::exp(-x)) * u[i];
    EXPECT_NEAR(y[i], exact, 4e-7 * std::fabs(exact) + 1e-30) << "gate " << g[i];
  }
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[1], 100.0f * u[1]);
}

// Against the definition in double (libm's exp), on lengths around the
// chunk of 256 and the 8 lanes, with a huge range and masked (-inf) logits.
TEST(LogSumExp, MatchesTheDefinitionOnOddLengthsAndMaskedValues) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 8.0f);
  for (int64_t n : {1, 7, 8, 9, 255, 256, 257, 1000, 262144}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    if (n > 9) x[5] = x[static_cast<size_t>(n) - 2] = -INFINITY;
    double max = -INFINITY;
    for (float v : x) max = std::max<double>(max, v);
    double sum = 0;
    for (float v : x) sum += std::exp(static_cast<double>(v) - max);
    const double want = max + std::log(sum);
    EXPECT_NEAR(LogSumExp(x.data(), n), want, 1e-6 * std::max(1.0, std::abs(want))) << n;
  }
  const float one[1] = {-3.5f};
  EXPECT_NEAR(LogSumExp(one, 1), -3.5, 1e-7);
}

}  // namespace
}  // namespace ellm::ops

#include "kernels/f16_vec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/fp16.h"

namespace ellm::kernels {
namespace {

TEST(F16Vec, Avx2MatchesReferenceOnOddLengths) {
  const auto& ref = GetF16VecAt(IsaLevel::kScalar);
  const auto& avx = GetF16VecAt(IsaLevel::kAvx2);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 2);
  for (int n : {1, 7, 8, 15, 16, 17, 255, 256, 259}) {
    std::vector<uint16_t> k(n);
    std::vector<float> q(n), y1(n), y2(n);
    double abs_sum = 0;
    for (int i = 0; i < n; ++i) {
      k[i] = quant::Fp32ToFp16(nd(rng));
      q[i] = nd(rng);
      y1[i] = y2[i] = nd(rng);
      abs_sum += std::fabs(quant::Fp16ToFp32(k[i]) * q[i]);
    }
    // Only the order of f32 additions differs.
    EXPECT_NEAR(avx.dot(n, k.data(), q.data()), ref.dot(n, k.data(), q.data()),
                1e-6 * abs_sum + 1e-6)
        << n;
    ref.axpy(n, 0.37f, k.data(), y1.data());
    avx.axpy(n, 0.37f, k.data(), y2.data());
    // FMA rounds once where the reference rounds twice.
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(y1[i], y2[i], 1e-6 * std::fabs(y1[i]) + 1e-6) << n << " " << i;
  }
}

}  // namespace
}  // namespace ellm::kernels

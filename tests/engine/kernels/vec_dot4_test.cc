#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "emulated_avx512.h"
#include "kernels/vec_dot.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace ellm::kernels {
namespace {

using quant::TensorType;

// Random weight rows of `type`: random bytes with every block's f16 scale
// (its first two bytes in these formats) replaced by a sane value.
std::vector<uint8_t> RandomRow(TensorType type, int64_t n, std::mt19937& rng) {
  const auto& tr = quant::Traits(type);
  std::vector<uint8_t> row(quant::RowBytes(tr, n));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (size_t off = 0; off < row.size(); off += tr.block_bytes) {
    const uint16_t d = quant::Fp32ToFp16(scale(rng));
    std::memcpy(row.data() + off, &d, 2);
  }
  return row;
}

// dot4 on four activation rows equals dot on each, bit for bit.
void ExpectFourSingleRowDots(TensorType type, VecDot4Fn dot4, VecDotFn dot, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  ASSERT_NE(dot4, nullptr) << quant::TypeName(type);
  ASSERT_NE(dot, nullptr) << quant::TypeName(type);
  for (int64_t n : {32, 96, 640, 2048, 32 * 33}) {
    auto w = RandomRow(type, n, rng);
    const auto act_type = quant::ActivationTypeFor(type);
    const size_t stride = quant::RowBytes(quant::Traits(act_type), n) + 8;  // padded stride
    std::vector<uint8_t> act(4 * stride);
    for (int t = 0; t < 4; ++t) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = nd(rng);
      quant::QuantizeRow(act_type, x.data(), act.data() + t * stride, n);
    }
    float out[4];
    dot4(n, w.data(), act.data(), stride, out);
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(out[t], dot(n, w.data(), act.data() + t * stride))
          << quant::TypeName(type) << " n=" << n << " t=" << t;
    }
  }
}

constexpr TensorType kFourRowTypes[] = {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0,
                                        TensorType::kIQ4_NL};

TEST(VecDot4, EqualsFourSingleRowDotsBitForBit) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(5);
  for (TensorType type : kFourRowTypes) {
    ExpectFourSingleRowDots(type, GetVecDot4(type), GetVecDot(type), rng);
  }
}

TEST(VecDot4, EmulatedAvx512VnniEqualsFourSingleRowDotsBitForBit) {
  std::mt19937 rng(6);
  for (TensorType type : kFourRowTypes) {
    ExpectFourSingleRowDots(type, internal::EmulatedAvx512VecDot4(type),
                            internal::EmulatedAvx512VecDot(type), rng);
  }
}

}  // namespace
}  // namespace ellm::kernels

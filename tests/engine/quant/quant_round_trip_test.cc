// Encode-then-decode stays within each activation format's stated rounding
// error, and the fp16/bf16 scalar conversions agree with the hardware (F16C)
// over every f16 and a large sample of f32 bit patterns.
#include <gtest/gtest.h>
#include <immintrin.h>  // F16C, only as an independent oracle for fp16.h

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/fp16.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/quant.h"

namespace ellm::quant {
namespace {

std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-3.0f, 3.0f);
  std::vector<float> x(n);
  // Blocks of very different magnitudes, so per-block scales matter.
  float scale = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 32 == 0) scale = std::pow(10.0f, exponent(rng));
    x[i] = normal(rng) * scale;
  }
  return x;
}

std::vector<float> RoundTrip(TensorType t, const std::vector<float>& x) {
  std::vector<uint8_t> enc(RowBytes(Traits(t), x.size()));
  QuantizeRow(t, x.data(), enc.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size());
  DequantizeRow(t, enc.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

// Q8 formats: each value is within half a step (amax / 127) of the input,
// plus the f16 rounding of the scale (relative 2^-11, times |q| <= 127).
void ExpectQ8Close(TensorType t, int block) {
  const std::vector<float> x = RandomFloats(4 * 256, 7);
  const std::vector<float> y = RoundTrip(t, x);
  const bool f16_scale = t != TensorType::kQ8_K;
  for (size_t b = 0; b < x.size() / block; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[b * block + j]));
    const float step = amax / 127.0f;
    const float tol = 0.5f * step * 1.0001f + (f16_scale ? amax * 0x1p-11f : amax * 1e-6f);
    for (int j = 0; j < block; ++j) {
      const size_t i = b * block + j;
      ASSERT_NEAR(y[i], x[i], tol) << TypeName(t) << " element " << i;
    }
  }
}

TEST(QuantRoundTrip, Q8_0WithinHalfAStep) { ExpectQ8Close(TensorType::kQ8_0, 32); }
TEST(QuantRoundTrip, Q8_1WithinHalfAStep) { ExpectQ8Close(TensorType::kQ8_1, 32); }
TEST(QuantRoundTrip, Q8_KWithinHalfAStep) { ExpectQ8Close(TensorType::kQ8_K, 256); }

TEST(QuantRoundTrip, Q8_1StoresScaledSum) {
  const std::vector<float> x = RandomFloats(8 * 32, 11);
  std::vector<BlockQ8_1> enc(8);
  QuantizeRow(TensorType::kQ8_1, x.data(), enc.data(), 8 * 32);
  for (const BlockQ8_1& b : enc) {
    int sum = 0;
    for (int8_t q : b.qs) sum += q;
    const float d = Fp16ToFp32(b.d);
    // s was rounded once from the f32 d; allow for d's own f16 rounding.
    EXPECT_NEAR(Fp16ToFp32(b.s), d * static_cast<float>(sum),
                std::fabs(d * static_cast<float>(sum)) * 0x1p-10f + 1e-30f);
  }
}

TEST(QuantRoundTrip, Q8_KBsumsAndRange) {
  std::vector<float> x = RandomFloats(3 * 256, 13);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero block
  std::vector<BlockQ8_K> enc(3);
  QuantizeRow(TensorType::kQ8_K, x.data(), enc.data(), 3 * 256);
  for (const BlockQ8_K& b : enc) {
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) {
        EXPECT_GE(b.qs[16 * g + l], -127);  // the AVX2 kernels rely on this
        sum += b.qs[16 * g + l];
      }
      EXPECT_EQ(b.bsums[g], sum);
    }
  }
  EXPECT_EQ(enc[1].d, 0.0f);
}

TEST(QuantRoundTrip, F16AndBF16WithinHalfAnUlp) {
  const std::vector<float> x = RandomFloats(1000, 17);
  const std::vector<float> h = RoundTrip(TensorType::kF16, x);
  const std::vector<float> b = RoundTrip(TensorType::kBF16, x);
  const std::vector<float> f = RoundTrip(TensorType::kF32, x);
  for (size_t i = 0; i < x.size(); ++i) {
    // f16: 11 significant bits, subnormal step 2^-24; bf16: 8 significant bits.
    EXPECT_NEAR(h[i], x[i], std::max(std::fabs(x[i]) * 0x1p-11f, 0x1p-25f)) << i;
    EXPECT_NEAR(b[i], x[i], std::fabs(x[i]) * 0x1p-8f) << i;
    EXPECT_EQ(f[i], x[i]) << i;
  }
}

TEST(Fp16, WideningMatchesF16cForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = _cvtsh_ss(static_cast<unsigned short>(h));
    const float got = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << h;
  }
}

TEST(Fp16, NarrowingMatchesF16cRoundToNearestEven) {
  // Returns false (after one failure message) on the first mismatch.
  auto check = [](uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    // (_cvtss_sh is a compound literal under Clang.)
    const uint16_t want = static_cast<uint16_t>(
        _mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT)));
    const uint16_t got = Fp32ToFp16(f);
    const bool ok = std::isnan(f) ? (got & 0x7c00) == 0x7c00 && (got & 0x03ff) != 0 : got == want;
    if (!ok)
      ADD_FAILURE() << std::hex << "f32 bits " << bits << ": got " << got << ", want " << want;
    return ok;
  };
  // Every f32 whose exponent lands in or next to f16's range, with the
  // mantissa bits that decide rounding exhausted, then random patterns.
  for (uint32_t exp = 96; exp <= 145; ++exp) {
    for (uint32_t high : {0x000u, 0x1ffu, 0x0aau, 0x155u}) {  // mantissa bits 14..22
      for (uint32_t low = 0; low < (1u << 14); ++low) {       // bits 0..13
        const uint32_t bits = (exp << 23) | (high << 14) | low;
        if (!check(bits) || !check(0x80000000u | bits)) return;
      }
    }
  }
  std::mt19937 rng(23);
  for (int i = 0; i < 2000000; ++i) {
    if (!check(rng())) return;
  }
  for (uint32_t bits : {0x0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x477ff000u, 0x477fefffu,
                        0x33000000u, 0x33000001u, 0x32ffffffu, 0x387fe000u, 0x387ff000u}) {
    EXPECT_TRUE(check(bits));
  }
}

TEST(Fp16, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);           // overflows to inf
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x7f800001u)) & 0x7fc0, 0x7fc0);  // quiet NaN
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(Fp32ToBf16(f), h);
    }
  }
}

}  // namespace
}  // namespace ellm::quant

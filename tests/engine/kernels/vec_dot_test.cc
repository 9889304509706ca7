// Dot-product kernels: every SIMD level against the scalar reference, and the
// reference itself against the exact dot product of the decoded rows.
//
// Tolerance. Every kernel forms exact integer sums inside a block and rounds
// only when scaling and accumulating blocks in f32, so its error is a few
// f32 ulps of the magnitudes it adds. We bound it by
//   1e-5 * S,  S = sum_i |w_i * a_i| + sum_i |m_i * a_i|,
// where w, a are the decoded rows and m_i is the weight's per-group offset
// (the "- dmin * m" / "+ m" term of Q4_1, Q5_1, Q2_K, Q4_K, Q5_K; zero for the
// others), because those kernels add the scale and offset terms separately and
// may cancel. With at most ~140 blocks per row, 1e-5 is ~170 f32 epsilons:
// generous against a worst-case sequential sum, and far below any indexing
// or bit-layout bug (which moves the result by O(S / sqrt(n)) or more).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "emulated_avx512.h"
#include "kernels/vec_dot.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace ellm::kernels {
namespace {

using quant::TensorType;

constexpr double kRelTol = 1e-5;

// Byte offsets of the f16 scale fields in one block, and the byte range of
// the quants behind an offset term (zeroing it leaves only the offset).
struct WeightLayout {
  TensorType type;
  std::vector<int> f16_scales;
  int offset_quants_begin = 0, offset_quants_end = 0;  // empty: no offset term
};

const std::vector<WeightLayout>& Layouts() {
  static const std::vector<WeightLayout> kLayouts = {
      {TensorType::kQ8_0, {0}},
      {TensorType::kQ4_0, {0}},
      {TensorType::kQ5_0, {0}},
      {TensorType::kQ4_1, {0, 2}, 4, 20},
      {TensorType::kQ5_1, {0, 2}, 4, 24},
      {TensorType::kQ2_K, {80, 82}, 16, 80},
      {TensorType::kQ3_K, {108}},
      {TensorType::kQ4_K, {0, 2}, 16, 144},
      {TensorType::kQ5_K, {0, 2}, 16, 176},
      {TensorType::kQ6_K, {208}},
      {TensorType::kIQ4_NL, {0}},
      {TensorType::kIQ4_XS, {0}},
      {TensorType::kF32, {}},
      {TensorType::kF16, {}},
      {TensorType::kBF16, {}},
  };
  return kLayouts;
}

const WeightLayout& LayoutOf(TensorType t) {
  for (const auto& l : Layouts()) {
    if (l.type == t) return l;
  }
  std::abort();
}

std::string Name(TensorType t) { return std::string(quant::TypeName(t)); }

// A weight row: random quant bytes, finite scales of magnitude 1e-3..1 (as
// in real models), or for the float types random normals.
std::vector<uint8_t> RandomWeights(TensorType t, int64_t n, std::mt19937& rng) {
  const auto& traits = quant::Traits(t);
  std::vector<uint8_t> row(quant::RowBytes(traits, n));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (t == TensorType::kF32) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      std::memcpy(row.data() + 4 * i, &v, 4);
    }
    return row;
  }
  if (t == TensorType::kF16 || t == TensorType::kBF16) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      const uint16_t h = t == TensorType::kF16 ? quant::Fp32ToFp16(v) : quant::Fp32ToBf16(v);
      std::memcpy(row.data() + 2 * i, &h, 2);
    }
    return row;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> exponent(-3.0f, 0.0f);
  for (size_t block = 0; block < row.size() / traits.block_bytes; ++block) {
    for (int off : LayoutOf(t).f16_scales) {
      const float v = std::pow(10.0f, exponent(rng)) * (byte(rng) & 1 ? 1.0f : -1.0f);
      const uint16_t h = quant::Fp32ToFp16(v);
      std::memcpy(row.data() + block * traits.block_bytes + off, &h, 2);
    }
  }
  return row;
}

std::vector<uint8_t> EncodeActivations(TensorType weight, const std::vector<float>& x) {
  const TensorType at = quant::ActivationTypeFor(weight);
  std::vector<uint8_t> enc(quant::RowBytes(quant::Traits(at), x.size()));
  quant::QuantizeRow(at, x.data(), enc.data(), static_cast<int64_t>(x.size()));
  return enc;
}

std::vector<float> RandomActivations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

std::vector<float> Decode(TensorType t, const std::vector<uint8_t>& row, int64_t n) {
  std::vector<float> out(n);
  quant::DequantizeRow(t, row.data(), out.data(), n);
  return out;
}

struct Truth {
  double dot;    // exact (double) dot product of the decoded rows
  double scale;  // S in the file comment
  // Error the activation format itself carries relative to its decoded values
  // (not the kernel's): Q8_1's s = d * sum(q) is rounded to f16 on its own,
  // from the f32 d rather than the stored f16 d, so m * s can differ from
  // m * sum(decoded a) by up to ~2^-10 of |m * s|. Zero for other formats.
  double format_slack;

  double Tolerance() const { return kRelTol * scale + format_slack; }
};

Truth ExactDot(TensorType t, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a,
               int64_t n) {
  const std::vector<float> wf = Decode(t, w, n);
  const std::vector<float> af = Decode(quant::ActivationTypeFor(t), a, n);
  std::vector<float> offsets(n, 0.0f);
  const WeightLayout& layout = LayoutOf(t);
  if (layout.offset_quants_end > 0) {
    std::vector<uint8_t> zeroed = w;
    const uint32_t bb = quant::Traits(t).block_bytes;
    for (size_t b = 0; b < zeroed.size() / bb; ++b) {
      std::memset(zeroed.data() + b * bb + layout.offset_quants_begin, 0,
                  layout.offset_quants_end - layout.offset_quants_begin);
    }
    offsets = Decode(t, zeroed, n);
  }
  Truth truth{0.0, 0.0, 0.0};
  if (quant::ActivationTypeFor(t) == TensorType::kQ8_1) {
    const uint32_t wb = quant::Traits(t).block_bytes;
    const uint32_t ab = quant::Traits(TensorType::kQ8_1).block_bytes;
    for (int64_t b = 0; b < n / 32; ++b) {
      uint16_t m, s;  // Q4_1/Q5_1 m and Q8_1 s both sit at byte 2 of their blocks
      std::memcpy(&m, w.data() + b * wb + 2, 2);
      std::memcpy(&s, a.data() + b * ab + 2, 2);
      truth.format_slack += std::fabs(quant::Fp16ToFp32(m) * quant::Fp16ToFp32(s)) * 0x1p-10;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    truth.dot += static_cast<double>(wf[i]) * af[i];
    truth.scale += std::fabs(static_cast<double>(wf[i]) * af[i]) +
                   std::fabs(static_cast<double>(offsets[i]) * af[i]);
  }
  return truth;
}

// Row lengths: one block up to several thousand elements, odd block counts.
std::vector<int64_t> Lengths(TensorType t) {
  const int64_t block = quant::Traits(t).block_elems;
  if (block == 1) return {1, 3, 7, 8, 31, 33, 100, 257, 1023, 4097};
  if (block == 32) return {32, 3 * 32, 7 * 32, 31 * 32, 33 * 32, 127 * 32};
  return {256, 3 * 256, 5 * 256, 9 * 256, 17 * 256};
}

class VecDot : public ::testing::TestWithParam<TensorType> {};

TEST_P(VecDot, ReferenceMatchesExactDotOfDecodedRows) {
  const TensorType t = GetParam();
  const VecDotFn ref = GetVecDotAt(t, IsaLevel::kScalar);
  ASSERT_NE(ref, nullptr);
  std::mt19937 rng(1000 + static_cast<uint32_t>(t));
  for (int64_t n : Lengths(t)) {
    for (int trial = 0; trial < 5; ++trial) {
      const auto w = RandomWeights(t, n, rng);
      const auto a = EncodeActivations(t, RandomActivations(n, rng));
      const Truth truth = ExactDot(t, w, a, n);
      const double got = ref(n, w.data(), a.data());
      ASSERT_NEAR(got, truth.dot, truth.Tolerance()) << Name(t) << " n=" << n;
    }
  }
}

// A SIMD kernel (`what` names it) against the scalar reference on random rows.
void ExpectMatchesReference(TensorType t, VecDotFn simd, const char* what, uint32_t seed) {
  const VecDotFn ref = GetVecDotAt(t, IsaLevel::kScalar);
  ASSERT_NE(simd, nullptr) << Name(t) << " has no kernel at " << what;
  ASSERT_NE(simd, ref) << Name(t) << " has no kernel at " << what;
  std::mt19937 rng(seed + static_cast<uint32_t>(t));
  for (int64_t n : Lengths(t)) {
    for (int trial = 0; trial < 5; ++trial) {
      const auto w = RandomWeights(t, n, rng);
      const auto a = EncodeActivations(t, RandomActivations(n, rng));
      const Truth truth = ExactDot(t, w, a, n);
      const float want = ref(n, w.data(), a.data());
      const float got = simd(n, w.data(), a.data());
      ASSERT_NEAR(got, want, kRelTol * truth.scale) << Name(t) << " at " << what << " n=" << n;
    }
  }
}

TEST_P(VecDot, Avx2MatchesReference) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 here";
  ExpectMatchesReference(GetParam(), GetVecDotAt(GetParam(), IsaLevel::kAvx2), "avx2", 2000);
}

TEST_P(VecDot, Avx512VnniMatchesReference) {
  if (HostCpu().Level() < IsaLevel::kAvx512Vnni) {
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI (" << IsaLevelName(HostCpu().Level())
                 << "): EmulatedAvx512VnniMatchesReference tests the same kernels";
  }
  ExpectMatchesReference(GetParam(), GetVecDotAt(GetParam(), IsaLevel::kAvx512Vnni), "avx512vnni",
                         4000);
}

TEST_P(VecDot, EmulatedAvx512VnniMatchesReference) {
  ExpectMatchesReference(GetParam(), internal::EmulatedAvx512VecDot(GetParam()),
                         "avx512vnni (emulated)", 4000);
}

// All-ones, all-high-bit and alternating quant bytes against activations of
// +-127 drive every VPMADDUBSW pair to its largest magnitude: the SIMD kernel
// must not saturate where the scalar sum does not.
class VecDotQuantized : public ::testing::TestWithParam<TensorType> {};

void ExpectMatchesReferenceOnExtremeQuants(TensorType t, VecDotFn simd, const char* what) {
  const VecDotFn ref = GetVecDotAt(t, IsaLevel::kScalar);
  ASSERT_NE(simd, nullptr) << Name(t) << " has no kernel at " << what;
  const int64_t n = 2 * 256;
  std::mt19937 rng(3000 + static_cast<uint32_t>(t));
  for (uint8_t pattern : {0x00, 0xff, 0x80, 0x7f, 0x55, 0xaa}) {
    std::vector<uint8_t> w = RandomWeights(t, n, rng);
    const auto layout = LayoutOf(t);
    const uint32_t bb = quant::Traits(t).block_bytes;
    for (size_t i = 0; i < w.size(); ++i) {
      bool is_scale = false;
      for (int off : layout.f16_scales)
        is_scale |=
            (i % bb == static_cast<size_t>(off)) || (i % bb == static_cast<size_t>(off + 1));
      if (!is_scale) w[i] = pattern;
    }
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = (i % 3 == 0 ? -sign : sign);
      const auto a = EncodeActivations(t, x);
      const Truth truth = ExactDot(t, w, a, n);
      const float want = ref(n, w.data(), a.data());
      const float got = simd(n, w.data(), a.data());
      EXPECT_NEAR(want, truth.dot, truth.Tolerance()) << Name(t) << " pattern " << int{pattern};
      EXPECT_NEAR(got, want, kRelTol * truth.scale)
          << Name(t) << " at " << what << " pattern " << int{pattern};
    }
  }
}

TEST_P(VecDotQuantized, Avx2MatchesReferenceOnExtremeQuants) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 here";
  ExpectMatchesReferenceOnExtremeQuants(GetParam(), GetVecDotAt(GetParam(), IsaLevel::kAvx2),
                                        "avx2");
}

TEST_P(VecDotQuantized, Avx512VnniMatchesReferenceOnExtremeQuants) {
  if (HostCpu().Level() < IsaLevel::kAvx512Vnni) {
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI (" << IsaLevelName(HostCpu().Level())
                 << "): EmulatedAvx512VnniMatchesReferenceOnExtremeQuants tests the same kernels";
  }
  ExpectMatchesReferenceOnExtremeQuants(GetParam(), GetVecDotAt(GetParam(), IsaLevel::kAvx512Vnni),
                                        "avx512vnni");
}

TEST_P(VecDotQuantized, EmulatedAvx512VnniMatchesReferenceOnExtremeQuants) {
  ExpectMatchesReferenceOnExtremeQuants(GetParam(), internal::EmulatedAvx512VecDot(GetParam()),
                                        "avx512vnni (emulated)");
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, VecDot,
                         ::testing::Values(TensorType::kQ8_0, TensorType::kQ5_0, TensorType::kQ4_K,
                                           TensorType::kQ6_K, TensorType::kF32, TensorType::kF16,
                                           TensorType::kBF16, TensorType::kQ4_0, TensorType::kQ4_1,
                                           TensorType::kQ5_1, TensorType::kQ2_K, TensorType::kQ3_K,
                                           TensorType::kQ5_K, TensorType::kIQ4_NL,
                                           TensorType::kIQ4_XS),
                         [](const auto& param_info) { return Name(param_info.param); });

INSTANTIATE_TEST_SUITE_P(QuantizedWeightTypes, VecDotQuantized,
                         ::testing::Values(TensorType::kQ8_0, TensorType::kQ5_0, TensorType::kQ4_K,
                                           TensorType::kQ6_K, TensorType::kQ4_0, TensorType::kQ4_1,
                                           TensorType::kQ5_1, TensorType::kQ2_K, TensorType::kQ3_K,
                                           TensorType::kQ5_K, TensorType::kIQ4_NL,
                                           TensorType::kIQ4_XS),
                         [](const auto& param_info) { return Name(param_info.param); });

TEST(VecDotDispatch, HigherLevelsFallBackAndUnknownTypesHaveNone) {
  // The AVX-512 kernels need VNNI: plain AVX-512 runs the AVX2 ones.
  EXPECT_EQ(GetVecDotAt(TensorType::kQ4_K, IsaLevel::kAvx512),
            GetVecDotAt(TensorType::kQ4_K, IsaLevel::kAvx2));
  EXPECT_NE(GetVecDotAt(TensorType::kQ4_K, IsaLevel::kAvx512Vnni),
            GetVecDotAt(TensorType::kQ4_K, IsaLevel::kAvx2));
  EXPECT_EQ(GetVecDot(TensorType::kQ4_K), GetVecDotAt(TensorType::kQ4_K, HostCpu().Level()));
  EXPECT_EQ(GetVecDot(TensorType::kIQ2_XXS), nullptr);
  EXPECT_EQ(GetVecDot(TensorType::kQ8_K), nullptr);  // an activation format only
}

}  // namespace
}  // namespace ellm::kernels

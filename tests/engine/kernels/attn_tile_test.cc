// Every SIMD attention tile kernel against its scalar reference, on odd
// shapes (row, key and dimension tails).
#include "kernels/attn_tile.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn_tile_inputs.h"
#include "emulated_avx512.h"
#include "quant/fp16.h"
#include "quant/q8_0.h"

namespace ellm::kernels {
namespace {

const AttnTileKernels& Ref() { return GetAttnTileAt(IsaLevel::kScalar); }
const AttnTileKernels& Simd() { return GetAttnTileAt(IsaLevel::kAvx2); }

TEST(AttnTile, ScoresMatchReferenceOnOddShapes) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(1);
  for (int rows : {1, 2, 3, 4, 7, 17, 32, 48}) {
    for (int keys : {1, 2, 3, 4, 5, 63, 64}) {
      for (int dim : {8, 13, 64, 256}) {
        auto q = Random(rows * (dim + 3), rng), k = Random(keys * (dim + 1), rng);
        std::vector<float> want(rows * 70), got(rows * 70);
        Ref().scores(rows, keys, dim, q.data(), dim + 3, k.data(), dim + 1, want.data(), 70);
        Simd().scores(rows, keys, dim, q.data(), dim + 3, k.data(), dim + 1, got.data(), 70);
        for (int r = 0; r < rows; ++r) {
          for (int j = 0; j < keys; ++j) {
            // f32 sums of `dim` unit-normal products in another order.
            ASSERT_NEAR(got[r * 70 + j], want[r * 70 + j], 1e-5 * dim)
                << rows << "x" << keys << "x" << dim;
          }
        }
      }
    }
  }
}

TEST(AttnTile, AccumulateMatchesReferenceOnOddShapes) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(2);
  for (int rows : {1, 2, 4, 5, 6, 11, 32, 48}) {
    for (int keys : {1, 3, 17, 64}) {
      for (int dim : {7, 32, 40, 256}) {
        auto p = Random(rows * 64, rng), v = Random(keys * dim, rng);
        auto want = Random(rows * dim, rng);
        auto got = want;
        Ref().accumulate(rows, keys, dim, p.data(), 64, v.data(), dim, want.data(), dim);
        Simd().accumulate(rows, keys, dim, p.data(), 64, v.data(), dim, got.data(), dim);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-5 * keys) << rows << "x" << keys << "x" << dim;
        }
      }
    }
  }
}

// Scores and Accumulate reading 16-bit halves equal the f32 versions on the
// widened rows bit for bit (attention picks either per tile, so batched and
// one-token results depend on it), and the references agree the same way.
// For bf16 keys that is ScoresBf16Wide (ScoresBf16 computes bf16 pair dot
// products instead: its own tests below).
TEST(AttnTile, HalfInputKernelsEqualF32OnWidenedRows) {
  std::mt19937 rng(4);
  for (bool bf16 : {false, true}) {
    for (const AttnTileKernels* kern : {&Ref(), &Simd()}) {
      if (kern == &Simd() && HostCpu().Level() < IsaLevel::kAvx2) continue;
      const auto to_half = bf16 ? quant::Fp32ToBf16 : quant::Fp32ToFp16;
      const auto widen = bf16 ? kern->bf16_to_f32 : kern->f16_to_f32;
      const auto scores = bf16 ? kern->scores_bf16_wide : kern->scores_f16;
      const auto accumulate = bf16 ? kern->accumulate_bf16 : kern->accumulate_f16;
      for (int rows : {1, 3, 4, 5, 7, 12, 48}) {
        for (int keys : {1, 2, 3, 16, 17, 64}) {
          for (int dim : {8, 13, 64, 256}) {
            const int ks = dim + 5;  // padded rows
            auto q = Random(rows * dim, rng), kf = Random(keys * ks, rng);
            std::vector<uint16_t> kh(kf.size());
            for (size_t i = 0; i < kf.size(); ++i) kh[i] = to_half(kf[i]);
            std::vector<float> kw(kf.size());
            widen(static_cast<int64_t>(kh.size()), kh.data(), kw.data());
            std::vector<float> want(rows * 64), got(rows * 64);
            kern->scores(rows, keys, dim, q.data(), dim, kw.data(), ks, want.data(), 64);
            // With a prefetch range (the rows themselves): a hint only.
            const int64_t kh_bytes = static_cast<int64_t>(kh.size() * sizeof(uint16_t));
            scores(rows, keys, dim, q.data(), dim, kh.data(), ks, got.data(), 64, kh.data(),
                   kh_bytes);
            for (int r = 0; r < rows; ++r) {
              for (int j = 0; j < keys; ++j) {
                ASSERT_EQ(got[r * 64 + j], want[r * 64 + j])
                    << (bf16 ? "bf16 " : "f16 ") << rows << "x" << keys << "x" << dim;
              }
            }
            auto p = Random(rows * 64, rng);
            auto o_want = Random(rows * dim, rng);
            auto o_got = o_want;
            kern->accumulate(rows, keys, dim, p.data(), 64, kw.data(), ks, o_want.data(), dim);
            accumulate(rows, keys, dim, p.data(), 64, kh.data(), ks, o_got.data(), dim, kh.data(),
                       kh_bytes);
            ASSERT_EQ(o_got, o_want)
                << (bf16 ? "bf16 " : "f16 ") << rows << "x" << keys << "x" << dim;
          }
        }
      }
    }
  }
}

// bf16 pair dot products: the AVX2 emulation (and the AVX-512 kernels,
// below) equal the reference bit for bit, which writes VDPBF16PS's
// arithmetic out; and they are what plain f32 sums of the same products
// give, up to the order of the additions.
TEST(AttnTile, ScoresBf16EqualReferenceBitForBit) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(11);
  for (int rows : {1, 2, 3, 4, 5, 9, 16, 17, 48}) {
    for (int keys : {1, 2, 3, 4, 5, 64, 65}) {
      for (int dim : {8, 13, 16, 40, 64, 256, 520}) {
        const int ks = dim + 5, ss = 72;
        std::vector<float> q;
        std::vector<uint16_t> kb;
        Bf16Inputs(rows, dim, keys, ks, rng, &q, &kb);
        std::vector<float> want(rows * ss, -7.0f), got(rows * ss, -7.0f);
        Ref().scores_bf16(rows, keys, dim, q.data(), dim + 3, kb.data(), ks, want.data(), ss,
                          nullptr, 0);
        Simd().scores_bf16(rows, keys, dim, q.data(), dim + 3, kb.data(), ks, got.data(), ss,
                           kb.data(), static_cast<int64_t>(kb.size() * 2));
        const std::string where =
            std::to_string(rows) + "x" + std::to_string(keys) + "x" + std::to_string(dim);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << where;
        for (int r = 0; r < rows; ++r) {
          for (int j = 0; j < keys; ++j) {
            double exact = 0;
            for (int d = 0; d < dim; ++d) {
              exact += double{q[r * (dim + 3) + d]} * quant::Bf16ToFp32(kb[j * ks + d]);
            }
            ASSERT_NEAR(got[r * ss + j], exact, 1e-5 * dim) << where;
          }
        }
      }
    }
  }
}

// The bf16-weights product: interleaving and the pair chains of the AVX2
// emulation equal the reference bit for bit, and the result is the f32
// weighted sum of the same (bf16) weights and values up to rounding.
TEST(AttnTile, AccumulateBf16PairsEqualReferenceBitForBit) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(12);
  for (int rows : {1, 2, 3, 4, 5, 8, 9, 13, 16, 48}) {
    for (int keys : {1, 2, 3, 17, 64, 65, 130}) {
      for (int dim : {7, 16, 24, 40, 64, 256}) {
        const int ps = 136;
        std::vector<float> p;
        std::vector<uint16_t> vb;
        Bf16PairInputs(rows, keys, dim, ps, rng, &p, &vb);
        const size_t n_pairs = static_cast<size_t>((keys + 1) / 2) * dim;
        std::vector<uint32_t> want_vp(n_pairs, 7u), got_vp(n_pairs, 9u);
        Ref().interleave_bf16_pairs(keys, dim, vb.data(), dim, want_vp.data(), nullptr, 0);
        // With a prefetch range (the rows themselves): a hint only.
        Simd().interleave_bf16_pairs(keys, dim, vb.data(), dim, got_vp.data(), vb.data(),
                                     static_cast<int64_t>(vb.size() * 2));
        const std::string where =
            std::to_string(rows) + "x" + std::to_string(keys) + "x" + std::to_string(dim);
        ASSERT_EQ(got_vp, want_vp) << where;
        const auto o0 = Random(static_cast<size_t>(rows) * (dim + 2), rng);
        auto want = o0, got = o0;
        Ref().accumulate_bf16_pairs(rows, keys, dim, p.data(), ps, want_vp.data(), want.data(),
                                    dim + 2);
        Simd().accumulate_bf16_pairs(rows, keys, dim, p.data(), ps, got_vp.data(), got.data(),
                                     dim + 2);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << where;
        for (int r = 0; r < rows; ++r) {
          for (int d = 0; d < dim; ++d) {
            double exact = o0[r * (dim + 2) + d];
            for (int j = 0; j < keys; ++j) {
              exact += double{p[r * ps + j]} * quant::Bf16ToFp32(vb[j * dim + d]);
            }
            ASSERT_NEAR(got[r * (dim + 2) + d], exact, 1e-5 * keys) << where;
          }
        }
      }
    }
  }
}

// VDPBF16PS flushes denormal inputs and results; the reference (and so the
// emulation) does too: a product of two tiny values is zero, not ~1e-40.
TEST(AttnTile, ScoresBf16FlushesDenormals) {
  const float q[16] = {1e-20f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  uint16_t k[16] = {};
  k[0] = quant::Fp32ToBf16(1e-20f);
  float s = 5.0f;
  Ref().scores_bf16(1, 1, 16, q, 16, k, 16, &s, 1, nullptr, 0);
  EXPECT_EQ(std::bit_cast<uint32_t>(s), 0u);
  ASSERT_GT(quant::Bf16ToFp32(quant::Fp32ToBf16(1e-20f)), 0.0f);
  if (HostCpu().Level() >= IsaLevel::kAvx2) {
    s = 5.0f;
    Simd().scores_bf16(1, 1, 16, q, 16, k, 16, &s, 1, nullptr, 0);
    EXPECT_EQ(std::bit_cast<uint32_t>(s), 0u);
  }
}

// The AVX-512 level does what the AVX2 one does, operation for operation:
// equal bits on every shape, for f32, f16 and bf16 K/V, and for Exp on
// every length (the tail too) over its whole range.
void ExpectEqualsAvx2BitForBit(const AttnTileKernels& wide) {
  ASSERT_NE(wide.scores, Simd().scores) << "the AVX-512 kernels are not built";
  ASSERT_NE(wide.exp, Simd().exp) << "the AVX-512 Exp is not built";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> range(-100.0f, 100.0f);
  for (int n : {1, 7, 8, 15, 16, 17, 31, 64, 100, 1000}) {
    std::vector<float> x(n);
    for (float& v : x) v = range(rng);
    x[0] = -std::numeric_limits<float>::infinity();
    if (n > 3) x[n - 1] = 0.0f, x[n / 2] = -87.3f, x[1] = 88.7f;
    std::vector<float> want(n + 1, 5.0f), got(n + 1, 5.0f);
    Simd().exp(n, x.data(), want.data());
    wide.exp(n, x.data(), got.data());
    ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * (n + 1)), 0) << "exp n=" << n;
  }
  // 34, 35, 48 rows: Scores transposes the keys from 32 rows on (all three
  // row remainders of its blocks of 3).
  for (int rows : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 34, 35, 48}) {
    for (int keys : {1, 2, 3, 4, 5, 7, 63, 64, 65, 130}) {
      for (int dim : {8, 13, 16, 40, 48, 64, 72, 256}) {
        const int ks = dim + 5, ss = 136;
        auto q = Random(rows * (dim + 3), rng), kf = Random(keys * ks, rng);
        std::vector<uint16_t> kh(kf.size()), kb(kf.size());
        for (size_t i = 0; i < kf.size(); ++i) {
          kh[i] = quant::Fp32ToFp16(kf[i]);
          kb[i] = quant::Fp32ToBf16(kf[i]);
        }
        const std::string where =
            std::to_string(rows) + "x" + std::to_string(keys) + "x" + std::to_string(dim);
        std::vector<float> want(rows * ss, -7.0f), got(rows * ss, -7.0f);
        Simd().scores(rows, keys, dim, q.data(), dim + 3, kf.data(), ks, want.data(), ss);
        wide.scores(rows, keys, dim, q.data(), dim + 3, kf.data(), ks, got.data(), ss);
        ASSERT_EQ(got, want) << "f32 scores " << where;
        Simd().scores_f16(rows, keys, dim, q.data(), dim + 3, kh.data(), ks, want.data(), ss,
                          nullptr, 0);
        wide.scores_f16(rows, keys, dim, q.data(), dim + 3, kh.data(), ks, got.data(), ss,
                        kb.data(), static_cast<int64_t>(kb.size() * 2));
        ASSERT_EQ(got, want) << "f16 scores " << where;
        Simd().scores_bf16_wide(rows, keys, dim, q.data(), dim + 3, kb.data(), ks, want.data(), ss,
                                nullptr, 0);
        wide.scores_bf16_wide(rows, keys, dim, q.data(), dim + 3, kb.data(), ks, got.data(), ss,
                              kh.data(), static_cast<int64_t>(kh.size() * 2));
        ASSERT_EQ(got, want) << "bf16 widened scores " << where;
        {
          std::vector<float> qb;
          std::vector<uint16_t> kd;
          Bf16Inputs(rows, dim, keys, ks, rng, &qb, &kd);
          Simd().scores_bf16(rows, keys, dim, qb.data(), dim + 3, kd.data(), ks, want.data(), ss,
                             nullptr, 0);
          wide.scores_bf16(rows, keys, dim, qb.data(), dim + 3, kd.data(), ks, got.data(), ss,
                           nullptr, 0);
          ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << "bf16 scores " << where;
        }

        {
          std::vector<float> pw;
          std::vector<uint16_t> vb;
          Bf16PairInputs(rows, keys, dim, ss, rng, &pw, &vb);
          std::vector<uint32_t> vp(static_cast<size_t>((keys + 1) / 2) * dim);
          Simd().interleave_bf16_pairs(keys, dim, vb.data(), dim, vp.data(), nullptr, 0);
          const auto o0 = Random(rows * (dim + 2), rng);
          auto o_want = o0, o_got = o0;
          Simd().accumulate_bf16_pairs(rows, keys, dim, pw.data(), ss, vp.data(), o_want.data(),
                                       dim + 2);
          wide.accumulate_bf16_pairs(rows, keys, dim, pw.data(), ss, vp.data(), o_got.data(),
                                     dim + 2);
          ASSERT_EQ(std::memcmp(o_got.data(), o_want.data(), o_got.size() * sizeof(float)), 0)
              << "bf16 pairs accumulate " << where;
        }
        auto p = Random(rows * ss, rng);
        const auto o0 = Random(rows * (dim + 2), rng);
        auto o_want = o0, o_got = o0;
        Simd().accumulate(rows, keys, dim, p.data(), ss, kf.data(), ks, o_want.data(), dim + 2);
        wide.accumulate(rows, keys, dim, p.data(), ss, kf.data(), ks, o_got.data(), dim + 2);
        ASSERT_EQ(o_got, o_want) << "f32 accumulate " << where;
        o_want = o_got = o0;
        Simd().accumulate_f16(rows, keys, dim, p.data(), ss, kh.data(), ks, o_want.data(), dim + 2,
                              nullptr, 0);
        wide.accumulate_f16(rows, keys, dim, p.data(), ss, kh.data(), ks, o_got.data(), dim + 2,
                            kb.data(), static_cast<int64_t>(kb.size() * 2));
        ASSERT_EQ(o_got, o_want) << "f16 accumulate " << where;
        o_want = o_got = o0;
        Simd().accumulate_bf16(rows, keys, dim, p.data(), ss, kb.data(), ks, o_want.data(), dim + 2,
                               nullptr, 0);
        wide.accumulate_bf16(rows, keys, dim, p.data(), ss, kb.data(), ks, o_got.data(), dim + 2,
                             nullptr, 0);
        ASSERT_EQ(o_got, o_want) << "bf16 accumulate " << where;
      }
    }
  }
}

TEST(AttnTile, Avx512EqualsAvx2BitForBit) {
  if (HostCpu().Level() < IsaLevel::kAvx512) {
    GTEST_SKIP() << "no AVX-512 here: " << HostCpu().ToString()
                 << " (EmulatedAvx512EqualsAvx2BitForBit tests the same kernels)";
  }
  ExpectEqualsAvx2BitForBit(GetAttnTileAt(IsaLevel::kAvx512));
}

TEST(AttnTile, EmulatedAvx512EqualsAvx2BitForBit) {
  ExpectEqualsAvx2BitForBit(internal::EmulatedAvx512AttnTile());
}

TEST(AttnTile, ExpIsAccurateAndZeroAtMinusInfinity) {
  std::vector<float> x;
  for (float v = -90.0f; v < 88.0f; v += 0.0137f) x.push_back(v);
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(0.0f);
  std::vector<float> y(x.size());
  Simd().exp(static_cast<int64_t>(x.size()), x.data(), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(double(x[i]));
    if (x[i] < -87.3f) {
      ASSERT_LE(y[i], 1.2e-38f) << x[i];
    } else {
      ASSERT_NEAR(y[i] / want, 1.0, 2e-7) << x[i];
    }
  }
  EXPECT_EQ(y[x.size() - 2], 0.0f);
  EXPECT_EQ(y[x.size() - 1], 1.0f);
}

TEST(AttnTile, HalfConversionsMatchReference) {
  std::mt19937 rng(3);
  std::vector<uint16_t> h(77);
  for (auto& v : h) v = quant::Fp32ToFp16(std::normal_distribution<float>(0, 100)(rng));
  std::vector<float> a(77), b(77);
  Ref().f16_to_f32(77, h.data(), a.data());
  Simd().f16_to_f32(77, h.data(), b.data());
  EXPECT_EQ(a, b);
  for (auto& v : h) v = quant::Fp32ToBf16(std::normal_distribution<float>(0, 100)(rng));
  Ref().bf16_to_f32(77, h.data(), a.data());
  Simd().bf16_to_f32(77, h.data(), b.data());
  EXPECT_EQ(a, b);
}

TEST(AttnTile, Q8_0DecodeMatchesReference) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(4);
  constexpr int kBlocks = 9;
  std::vector<quant::BlockQ8_0> x(kBlocks);
  for (auto& blk : x) {
    blk.d = quant::Fp32ToFp16(std::normal_distribution<float>(0, 0.05f)(rng));
    for (auto& q : blk.qs) q = static_cast<int8_t>(rng());  // -128 .. 127
  }
  x[3].d = quant::Fp32ToFp16(-0.0f);
  x[4].d = 0x0001;  // the smallest f16 subnormal
  std::vector<float> a(32 * kBlocks), b(32 * kBlocks, 1.0f);
  const auto* src = reinterpret_cast<const uint8_t*>(x.data());
  Ref().q8_0_to_f32(32 * kBlocks, src, a.data());
  Simd().q8_0_to_f32(32 * kBlocks, src, b.data());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << i;
  }
}

}  // namespace
}  // namespace ellm::kernels

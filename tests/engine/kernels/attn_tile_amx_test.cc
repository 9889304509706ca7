// Attention's tile products (AttnScores::kTiles, attn_tile.h
// ScoresBf16Tiles / AccumulateBf16Tiles): the AMX kernels against the
// scalar references, bit for bit, on our model of the tile instructions
// everywhere and on the real ones where the CPU has AMX-BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attn_tile_inputs.h"
#include "emulated_amx.h"
#include "kernels/attn_tile.h"
#include "quant/fp16.h"

namespace ellm::kernels {
namespace {

const AttnTileKernels& Ref() { return GetAttnTileAt(IsaLevel::kScalar); }

std::string Where(int rows, int keys, int dim) {
  return std::to_string(rows) + "x" + std::to_string(keys) + "x" + std::to_string(dim);
}

// Row tiles 1-3 (odd and even counts, partial), key groups 1-5 and
// dimensions with and without a partial chunk of 32 (and odd strides).
void ExpectScoresEqualReference(const AttnTileKernels& t) {
  std::mt19937 rng(21);
  for (int rows : {1, 4, 16, 17, 40}) {
    for (int keys : {1, 2, 16, 17, 33, 65}) {
      for (int dim : {8, 30, 64, 80, 256}) {
        const int ks = dim + 5, ss = 72;
        std::vector<float> q;
        std::vector<uint16_t> kb;
        Bf16Inputs(rows, dim, keys, ks, rng, &q, &kb);
        std::vector<float> want(rows * ss, -7.0f), got(rows * ss, -7.0f);
        Ref().scores_bf16_tiles(rows, keys, dim, q.data(), dim + 3, kb.data(), ks, want.data(), ss,
                                nullptr, 0);
        t.scores_bf16_tiles(rows, keys, dim, q.data(), dim + 3, kb.data(), ks, got.data(), ss,
                            nullptr, 0);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
            << Where(rows, keys, dim);
        for (int r = 0; r < rows; ++r) {
          for (int j = 0; j < keys; ++j) {
            double exact = 0;
            for (int d = 0; d < dim; ++d) {
              exact += double{q[r * (dim + 3) + d]} * quant::Bf16ToFp32(kb[j * ks + d]);
            }
            ASSERT_NEAR(got[r * ss + j], exact, 1e-5 * dim) << Where(rows, keys, dim);
          }
        }
      }
    }
  }
}

// Keys with and without a partial chunk of 32 (an odd last key too), and
// output widths of 1-16 column groups (24: the reference's fallback).
void ExpectAccumulateEqualsReference(const AttnTileKernels& t) {
  std::mt19937 rng(22);
  for (int rows : {1, 4, 17, 40}) {
    for (int keys : {1, 2, 31, 33, 64, 65, 130}) {
      for (int dim : {16, 24, 48, 256}) {
        const int ps = 136, os = dim + 2;
        std::vector<float> p;
        std::vector<uint16_t> vb;
        Bf16PairInputs(rows, keys, dim, ps, rng, &p, &vb);
        std::vector<uint32_t> vp(static_cast<size_t>((keys + 1) / 2) * dim);
        Ref().interleave_bf16_pairs(keys, dim, vb.data(), dim, vp.data(), nullptr, 0);
        const auto o0 = Random(static_cast<size_t>(rows) * os, rng);
        auto want = o0, got = o0;
        Ref().accumulate_bf16_tiles(rows, keys, dim, p.data(), ps, vp.data(), want.data(), os);
        t.accumulate_bf16_tiles(rows, keys, dim, p.data(), ps, vp.data(), got.data(), os);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
            << Where(rows, keys, dim);
        for (int r = 0; r < rows; ++r) {
          for (int d = 0; d < dim; ++d) {
            double exact = o0[r * os + d];
            for (int j = 0; j < keys; ++j) {
              exact += double{p[r * ps + j]} * quant::Bf16ToFp32(vb[j * dim + d]);
            }
            ASSERT_NEAR(got[r * os + d], exact, 1e-5 * keys) << Where(rows, keys, dim);
          }
        }
      }
    }
  }
}

AttnTileKernels EmulatedAmx() {
  AttnTileKernels k = GetAttnTileAt(IsaLevel::kAvx2);
  internal::EmulatedUseAmxAttnTile(&k);
  return k;
}

bool HasAmxBf16() { return HostCpu().Level() >= IsaLevel::kAmx && HostCpu().amx_bf16; }

TEST(AttnTileAmx, EmulatedScoresEqualReferenceBitForBit) {
  const AttnTileKernels k = EmulatedAmx();
  ASSERT_NE(k.scores_bf16_tiles, Ref().scores_bf16_tiles) << "the AMX file was not built";
  ExpectScoresEqualReference(k);
}

TEST(AttnTileAmx, EmulatedAccumulateEqualsReferenceBitForBit) {
  const AttnTileKernels k = EmulatedAmx();
  ASSERT_NE(k.accumulate_bf16_tiles, Ref().accumulate_bf16_tiles) << "the AMX file was not built";
  ExpectAccumulateEqualsReference(k);
}

TEST(AttnTileAmx, ScoresEqualReferenceBitForBit) {
  if (!HasAmxBf16()) {
    GTEST_SKIP() << "no AMX-BF16 here: " << HostCpu().ToString()
                 << " (EmulatedScoresEqualReferenceBitForBit tests the same kernel)";
  }
  ExpectScoresEqualReference(GetAttnTileAt(IsaLevel::kAmx));
}

TEST(AttnTileAmx, AccumulateEqualsReferenceBitForBit) {
  if (!HasAmxBf16()) {
    GTEST_SKIP() << "no AMX-BF16 here: " << HostCpu().ToString()
                 << " (EmulatedAccumulateEqualsReferenceBitForBit tests the same kernel)";
  }
  ExpectAccumulateEqualsReference(GetAttnTileAt(IsaLevel::kAmx));
}

// The chunks are the arithmetic: each chunk of 32 dimensions starts its
// chains at zero and adds its sum to the total once. 2^24 in the first
// chunk and sixteen 1s in the second: the second chunk sums its 1s to 16
// first, so the total is 2^24 + 16; one chain over all the products adds
// each 1 to 2^24, where it is lost to rounding (the ulp there is 2).
TEST(AttnTileAmx, EachChunkOf32DimensionsStartsItsChainsAtZero) {
  const int dim = 64;
  std::vector<float> q(dim, 1.0f);
  std::vector<uint16_t> k(dim, 0);
  k[0] = quant::Fp32ToBf16(16777216.0f);
  for (int d = 32; d < dim; d += 2) k[d] = quant::Fp32ToBf16(1.0f);
  float chain = 0.0f;
  for (int d = 0; d < dim; ++d) chain = std::fma(q[d], quant::Bf16ToFp32(k[d]), chain);
  ASSERT_EQ(chain, 16777216.0f);
  float s = 0.0f;
  Ref().scores_bf16_tiles(1, 1, dim, q.data(), dim, k.data(), dim, &s, 1, nullptr, 0);
  EXPECT_EQ(s, 16777232.0f);
  float e = -1.0f;
  EmulatedAmx().scores_bf16_tiles(1, 1, dim, q.data(), dim, k.data(), dim, &e, 1, nullptr, 0);
  EXPECT_EQ(e, 16777232.0f);
}

}  // namespace
}  // namespace ellm::kernels

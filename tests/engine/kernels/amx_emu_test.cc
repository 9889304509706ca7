// The software model of the AMX tile instructions (kernels/amx_emu.h)
// against plain scalar definitions of their results: random shapes (M <= 16
// rows, K <= 64 bytes, N <= 16 dwords), strides wider than a row, every
// signedness of the int8 products with 32-bit wrap-around, and TDPBF16PS's
// rounding and denormal rules. The AMX kernels' own tests (gemm_packed_test)
// run on this model where the CPU has no AMX.
#include "kernels/amx_emu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace ellm::kernels {
namespace {

using amx_emu::TileConfig;

// Tiles 0 (C: m rows x n dwords), 1 (A: m rows x k_bytes), 2 (B: k_bytes / 4
// rows x n dwords).
void Configure(int m, int k_bytes, int n) {
  TileConfig c{};
  c.palette_id = 1;
  c.rows[0] = static_cast<uint8_t>(m);
  c.colsb[0] = static_cast<uint16_t>(4 * n);
  c.rows[1] = static_cast<uint8_t>(m);
  c.colsb[1] = static_cast<uint16_t>(k_bytes);
  c.rows[2] = static_cast<uint8_t>(k_bytes / 4);
  c.colsb[2] = static_cast<uint16_t>(4 * n);
  _tile_loadconfig(&c);
}

struct Problem {
  int m, k, n;  // rows, bytes of A per row, dwords of C per row
  long a_stride, b_stride, c_stride;
  std::vector<uint8_t> a, b, c;  // c: m rows of n dwords at c_stride
};

Problem RandomProblem(std::mt19937& rng) {
  Problem p;
  p.m = std::uniform_int_distribution<int>(1, 16)(rng);
  p.k = 4 * std::uniform_int_distribution<int>(1, 16)(rng);
  p.n = std::uniform_int_distribution<int>(1, 16)(rng);
  std::uniform_int_distribution<int> pad(0, 37);
  p.a_stride = p.k + pad(rng);
  p.b_stride = 4 * p.n + pad(rng);
  p.c_stride = 4 * p.n + pad(rng);
  std::uniform_int_distribution<int> byte(0, 255);
  p.a.resize(static_cast<size_t>(p.a_stride) * p.m);
  p.b.resize(static_cast<size_t>(p.b_stride) * (p.k / 4));
  p.c.resize(static_cast<size_t>(p.c_stride) * p.m);
  for (auto* v : {&p.a, &p.b, &p.c}) {
    for (auto& x : *v) x = static_cast<uint8_t>(byte(rng));
  }
  return p;
}

uint32_t Dword(const std::vector<uint8_t>& v, size_t off) {
  uint32_t x;
  std::memcpy(&x, v.data() + off, 4);
  return x;
}

// C[i][j] + sum over k of A[i][k] * B[k / 4][4 j + k % 4], modulo 2^32.
std::vector<uint32_t> ScalarInt8(const Problem& p, bool a_signed, bool b_signed) {
  std::vector<uint32_t> out(static_cast<size_t>(p.m) * p.n);
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      int64_t sum = 0;
      for (int k = 0; k < p.k; ++k) {
        const uint8_t x = p.a[i * p.a_stride + k];
        const uint8_t y = p.b[(k / 4) * p.b_stride + 4 * j + k % 4];
        const int64_t xv = a_signed ? static_cast<int8_t>(x) : x;
        const int64_t yv = b_signed ? static_cast<int8_t>(y) : y;
        sum += xv * yv;
      }
      const uint64_t c = Dword(p.c, static_cast<size_t>(i * p.c_stride + 4 * j));
      out[i * p.n + j] = static_cast<uint32_t>(c + static_cast<uint64_t>(sum));
    }
  }
  return out;
}

// Runs one TDP* instruction (`dot`) through the model; returns the stored C, and checks that
// tilestored wrote nothing outside its rows and colsb.
template <class Dot>
std::vector<uint32_t> RunModel(const Problem& p, Dot dot) {
  Configure(p.m, p.k, p.n);
  _tile_loadd(0, p.c.data(), p.c_stride);
  _tile_loadd(1, p.a.data(), p.a_stride);
  _tile_loadd(2, p.b.data(), p.b_stride);
  dot();
  std::vector<uint8_t> stored(p.c.size(), 0xa5);
  _tile_stored(0, stored.data(), p.c_stride);
  _tile_release();
  std::vector<uint32_t> out(static_cast<size_t>(p.m) * p.n);
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) out[i * p.n + j] = Dword(stored, i * p.c_stride + 4 * j);
    for (long b = 4 * p.n; b < p.c_stride; ++b) {
      EXPECT_EQ(stored[i * p.c_stride + b], 0xa5) << "tilestored wrote past colsb";
    }
  }
  return out;
}

TEST(AmxEmu, Int8DotProductsMatchScalarDefinitionOnRandomShapes) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    const Problem p = RandomProblem(rng);
    SCOPED_TRACE(testing::Message() << "m=" << p.m << " k=" << p.k << " n=" << p.n);
    EXPECT_EQ(RunModel(p, [] { _tile_dpbssd(0, 1, 2); }), ScalarInt8(p, true, true));
    EXPECT_EQ(RunModel(p, [] { _tile_dpbsud(0, 1, 2); }), ScalarInt8(p, true, false));
    EXPECT_EQ(RunModel(p, [] { _tile_dpbusd(0, 1, 2); }), ScalarInt8(p, false, true));
    EXPECT_EQ(RunModel(p, [] { _tile_dpbuud(0, 1, 2); }), ScalarInt8(p, false, false));
  }
}

TEST(AmxEmu, Int8SumsWrapAroundIn32Bits) {
  Problem p{16, 64, 16, 64, 64, 64, {}, {}, {}};
  p.a.assign(64 * 16, 255);
  p.b.assign(64 * 16, 255);
  p.c.resize(64 * 16);
  for (int i = 0; i < 16 * 16; ++i) {
    const uint32_t v = 0x7fffffffu;
    std::memcpy(p.c.data() + 4 * i, &v, 4);
  }
  // 64 products of 255 * 255 past INT32_MAX.
  const uint32_t want = 0x7fffffffu + 64u * 255u * 255u;
  for (uint32_t got : RunModel(p, [] { _tile_dpbuud(0, 1, 2); })) ASSERT_EQ(got, want);
  // Signed: -1 * -1, 64 times, onto INT32_MAX.
  for (uint32_t got : RunModel(p, [] { _tile_dpbssd(0, 1, 2); })) ASSERT_EQ(got, 0x8000003fu);
}

TEST(AmxEmu, LoadsZeroWhatTheShapeLeavesOutAndZeroClearsATile) {
  Configure(5, 20, 3);
  std::vector<uint8_t> src(64 * 16, 0xff);
  _tile_loadd(1, src.data(), 64);
  const auto& s = amx_emu::State();
  for (int r = 0; r < 16; ++r) {
    for (int b = 0; b < 64; ++b) {
      ASSERT_EQ(s.tile[1][r][b], r < 5 && b < 20 ? 0xff : 0) << "row " << r << " byte " << b;
    }
  }
  _tile_zero(1);
  for (int r = 0; r < 16; ++r) {
    for (int b = 0; b < 64; ++b) ASSERT_EQ(s.tile[1][r][b], 0);
  }
  TileConfig back;
  _tile_storeconfig(&back);
  EXPECT_EQ(back.palette_id, 1);
  EXPECT_EQ(back.rows[1], 5);
  EXPECT_EQ(back.colsb[1], 20);
  _tile_release();
  _tile_storeconfig(&back);
  EXPECT_EQ(back.palette_id, 0);
}

// ---- TDPBF16PS ----

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float Bf16At(const std::vector<uint8_t>& v, size_t off) {
  uint16_t h;
  std::memcpy(&h, v.data() + off, 2);
  return FromBits(static_cast<uint32_t>(h) << 16);
}
// Denormals read as zero (sign kept), results flushed to zero (sign kept):
// a software statement of DAZ and FTZ, independent of MXCSR.
float Daz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
float Ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// The SDM's TDPBF16PS: per element, even and odd FMAs over k into two
// accumulators from zero, then C + (even + odd).
std::vector<uint32_t> ScalarBf16(const Problem& p) {
  std::vector<uint32_t> out(static_cast<size_t>(p.m) * p.n);
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      float acc[2] = {0.0f, 0.0f};
      for (int k = 0; k < p.k / 4; ++k) {
        for (int h = 0; h < 2; ++h) {
          const float x = Daz(Bf16At(p.a, i * p.a_stride + 4 * k + 2 * h));
          const float y = Daz(Bf16At(p.b, k * p.b_stride + 4 * j + 2 * h));
          acc[h] = Ftz(std::fma(x, y, acc[h]));
        }
      }
      const float c = Daz(FromBits(Dword(p.c, static_cast<size_t>(i * p.c_stride + 4 * j))));
      out[i * p.n + j] = Bits(Ftz(c + Ftz(acc[0] + acc[1])));
    }
  }
  return out;
}

void PutBf16(std::vector<uint8_t>& v, size_t off, float x) {
  const uint16_t h = static_cast<uint16_t>(Bits(x) >> 16);
  std::memcpy(v.data() + off, &h, 2);
}

// Fills A, B (bf16) and C (f32) with values whose sums round, plus some
// denormal bf16 inputs, some denormal C entries and products that underflow.
void FillBf16(Problem& p, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 19);
  const auto value = [&](bool allow_tiny) {
    const int kind = pick(rng);
    if (kind == 0) return FromBits(static_cast<uint32_t>(pick(rng) + 1) << 16);  // denormal
    if (kind == 1 && allow_tiny) return std::ldexp(normal(rng), -70);  // underflowing products
    return normal(rng) * std::ldexp(1.0f, pick(rng) - 10);
  };
  for (int i = 0; i < p.m; ++i) {
    for (int k = 0; k < p.k / 2; ++k) PutBf16(p.a, i * p.a_stride + 2 * k, value(true));
  }
  for (int k = 0; k < p.k / 4; ++k) {
    for (int j = 0; j < 2 * p.n; ++j) PutBf16(p.b, k * p.b_stride + 2 * j, value(true));
  }
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      const float c = pick(rng) == 0 ? FromBits(0x00012345u) : value(false);
      std::memcpy(p.c.data() + i * p.c_stride + 4 * j, &c, 4);
    }
  }
}

TEST(AmxEmu, Bf16DotProductsMatchScalarDefinitionOnRandomShapes) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    Problem p = RandomProblem(rng);
    FillBf16(p, rng);
    SCOPED_TRACE(testing::Message() << "m=" << p.m << " k=" << p.k << " n=" << p.n);
    EXPECT_EQ(RunModel(p, [] { _tile_dpbf16ps(0, 1, 2); }), ScalarBf16(p));
  }
}

// One element, its K pairs given: A's row and B's column.
float OneBf16(const std::vector<float>& a, const std::vector<float>& b, float c) {
  const int k = static_cast<int>(a.size());  // bf16 values, even count
  Problem p{1, 2 * k, 1, 2 * k, 4, 4, {}, {}, {}};
  p.a.resize(2 * k);
  p.b.resize(2 * k);
  p.c.resize(4);
  for (int i = 0; i < k; ++i) {
    PutBf16(p.a, 2 * i, a[i]);
    PutBf16(p.b, 2 * i, b[i]);  // B row i / 2 holds pair i / 2 of the one column
  }
  std::memcpy(p.c.data(), &c, 4);
  return FromBits(RunModel(p, [] { _tile_dpbf16ps(0, 1, 2); })[0]);
}

TEST(AmxEmu, Bf16DenormalInputsCountAsZeroAndTinyResultsFlush) {
  const float denormal = FromBits(0x00010000u);  // the smallest bf16 denormal
  EXPECT_EQ(OneBf16({denormal, 0.0f}, {1.0f, 0.0f}, 0.0f), 0.0f);
  EXPECT_EQ(OneBf16({std::ldexp(1.0f, 100), 0.0f}, {denormal, 0.0f}, 0.0f), 0.0f);
  // 2^-70 * 2^-70 = 2^-140 is an f32 denormal: flushed.
  EXPECT_EQ(OneBf16({std::ldexp(1.0f, -70), 0.0f}, {std::ldexp(1.0f, -70), 0.0f}, 0.0f), 0.0f);
  // A denormal C reads as zero.
  EXPECT_EQ(OneBf16({1.0f, 0.0f}, {0.0f, 0.0f}, FromBits(0x00000001u)), 0.0f);
  // 2^-63 * 2^-63 = 2^-126 is normal: kept.
  EXPECT_EQ(OneBf16({std::ldexp(1.0f, -63), 0.0f}, {std::ldexp(1.0f, -63), 0.0f}, 0.0f),
            std::ldexp(1.0f, -126));
}

TEST(AmxEmu, Bf16SumsRoundToNearestEvenInTheDocumentedOrder) {
  const float ulp_half = std::ldexp(1.0f, -24);  // half an ulp of 1
  // Even accumulator: 1 + 2^-24 (a tie: stays 1); odd: 2^-24. Their sum 1 +
  // 2^-24 ties again to 1; a single sum of all three would give 1 + 2^-23.
  EXPECT_EQ(OneBf16({1.0f, ulp_half, ulp_half, 0.0f}, {1.0f, 1.0f, 1.0f, 0.0f}, 0.0f), 1.0f);
  // C is added last: (1 + 2^-24 + 2^-24) = 1 + 2^-23 when C takes both halves.
  EXPECT_EQ(OneBf16({ulp_half, ulp_half}, {1.0f, 1.0f}, 1.0f), 1.0f + 2 * ulp_half);
  // Odd-numbered bf16 go to the odd accumulator: 1 + 3/4 ulp rounds up.
  EXPECT_EQ(OneBf16({1.0f, 1.5f * ulp_half}, {1.0f, 1.0f}, 0.0f), 1.0f + 2 * ulp_half);
}

void ZeroWithoutConfig() {
  _tile_release();
  _tile_zero(0);
}
void DotWithMismatchedRows() {
  Configure(4, 64, 16);
  TileConfig c;
  _tile_storeconfig(&c);
  c.rows[1] = 3;  // A's rows differ from C's
  _tile_loadconfig(&c);
  _tile_dpbssd(0, 1, 2);
}
void ConfigureSeventeenRows() {
  TileConfig c{};
  c.palette_id = 1;
  c.rows[0] = 17;
  c.colsb[0] = 64;
  _tile_loadconfig(&c);
}

TEST(AmxEmuDeathTest, ShapesTheHardwareRejectsStopTheProcess) {
  EXPECT_DEATH(ZeroWithoutConfig(), "no tile configuration");
  EXPECT_DEATH(DotWithMismatchedRows(), "tsrcdest.rows != tsrc1.rows");
  EXPECT_DEATH(ConfigureSeventeenRows(), "rows > 16");
}

}  // namespace
}  // namespace ellm::kernels

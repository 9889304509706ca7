// Packed GEMM kernels against the row-wise scalar dot products.
//
// Every level of the packed GEMM repeats vec_dot_ref's arithmetic on the
// packed layout (exact integer sums per block, the same float products and
// one sequential sum over blocks, no fused multiply-adds), so each output
// must equal RefVecDot of the unpacked row bit for bit: a packing, indexing,
// tail or overflow error shows as an inequality, not as a drift to bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "emulated_amx.h"
#include "emulated_avx512.h"
#include "kernels/gemm_packed.h"
#include "kernels/gemm_packed_isa.h"
#include "kernels/vec_dot.h"
#include "ops/packed_weight.h"
#include "quant/fp16.h"
#include "quant/quant.h"

namespace ellm::kernels {
namespace {

using quant::TensorType;

// Byte offsets of the f16 scales in one block (random bytes there could be
// NaN).
std::vector<int> ScaleOffsets(TensorType t) {
  switch (t) {
    case TensorType::kQ4_1:
    case TensorType::kQ5_1:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
      return {0, 2};
    case TensorType::kQ6_K:
      return {208};
    case TensorType::kQ3_K:
      return {108};
    case TensorType::kQ2_K:
      return {80, 82};
    default:
      return {0};
  }
}

struct Problem {
  TensorType type;
  int64_t rows, cols, tokens;
  std::vector<uint8_t> w;    // rows x row_bytes, GGUF layout
  std::vector<uint8_t> act;  // tokens x act_stride, ActivationTypeFor(type)
  size_t row_bytes = 0, act_stride = 0;
  std::vector<float> block_d, block_s;
  std::vector<int32_t> block_sum;

  GemmActivations Activations() const {
    GemmActivations a;
    a.rows = act.data();
    a.stride = act_stride;
    a.n_tokens = tokens;
    if (!block_d.empty()) a.block_d = block_d.data();
    if (!block_sum.empty()) a.block_sum = block_sum.data();
    if (!block_s.empty()) a.block_s = block_s.data();
    return a;
  }
  const uint8_t* Row(int64_t r) const { return w.data() + r * row_bytes; }
  const uint8_t* Act(int64_t t) const { return act.data() + t * act_stride; }
};

Problem MakeProblem(TensorType type, int64_t rows, int64_t cols, int64_t tokens, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p{type, rows, cols, tokens};
  const auto& tr = quant::Traits(type);
  p.row_bytes = quant::RowBytes(tr, cols);
  p.w.resize(p.row_bytes * rows);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : p.w) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> exponent(-3.0f, 0.0f);
  for (size_t off = 0; off < p.w.size(); off += tr.block_bytes) {
    for (int s : ScaleOffsets(type)) {
      const float v = std::pow(10.0f, exponent(rng)) * (byte(rng) & 1 ? 1.0f : -1.0f);
      const uint16_t h = quant::Fp32ToFp16(v);
      std::memcpy(p.w.data() + off + s, &h, 2);
    }
  }
  const TensorType at = quant::ActivationTypeFor(type);
  p.act_stride = quant::RowBytes(quant::Traits(at), cols) + 4;  // a padded stride
  p.act.resize(p.act_stride * tokens);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t t = 0; t < tokens; ++t) {
    for (float& v : x) v = normal(rng);
    quant::QuantizeRow(at, x.data(), p.act.data() + t * p.act_stride, cols);
  }
  if (at == TensorType::kQ8_0) {
    p.block_d.resize(tokens * cols / 32);
    p.block_sum.resize(tokens * cols / 32);
    SummarizeQ8_0(p.act.data(), p.act_stride, tokens, cols, p.block_d.data(), p.block_sum.data());
  }
  if (at == TensorType::kQ8_1) {
    p.block_d.resize(tokens * cols / 32);
    p.block_s.resize(tokens * cols / 32);
    SummarizeQ8_1(p.act.data(), p.act_stride, tokens, cols, p.block_d.data(), p.block_s.data());
  }
  return p;
}

std::unique_ptr<ops::PackedWeight> Pack(const Problem& p) {
  const ops::PackSource src{p.type, p.rows, p.cols, p.w.data(), p.row_bytes, false};
  auto packed = ops::PackWeights({&src, 1}, 2);
  return std::move(packed[0]);
}

std::vector<int64_t> Columns(TensorType t) {
  if (quant::Traits(t).block_elems == 32) return {32, 96, 640, 1024, 2048};
  return {256, 768, 1024, 2048};
}

const TensorType kTypes[] = {TensorType::kQ8_0, TensorType::kQ5_0,   TensorType::kQ4_0,
                             TensorType::kQ5_1, TensorType::kQ4_1,   TensorType::kQ2_K,
                             TensorType::kQ3_K, TensorType::kQ4_K,   TensorType::kQ5_K,
                             TensorType::kQ6_K, TensorType::kIQ4_NL, TensorType::kIQ4_XS};

std::string Where(const Problem& p, int64_t r, int64_t t) {
  return std::string(quant::TypeName(p.type)) + " rows=" + std::to_string(p.rows) +
         " cols=" + std::to_string(p.cols) + " tokens=" + std::to_string(p.tokens) +
         " r=" + std::to_string(r) + " t=" + std::to_string(t);
}

class GemmPacked : public ::testing::TestWithParam<TensorType> {};

TEST_P(GemmPacked, ReferenceEqualsRowWiseReferenceBitForBit) {
  const TensorType type = GetParam();
  const GemmPackedFn gemm = GetGemmPackedAt(type, IsaLevel::kScalar);
  const VecDotFn dot = GetVecDotAt(type, IsaLevel::kScalar);
  ASSERT_NE(gemm, nullptr);
  uint32_t seed = 1;
  for (int64_t cols : Columns(type)) {
    for (int64_t rows : {1, 8, 13}) {
      const Problem p = MakeProblem(type, rows, cols, 3, seed++);
      const auto packed = Pack(p);
      std::vector<float> y(p.tokens * rows);
      gemm(packed->matrix(), 0, rows, p.Activations(), y.data(), rows);
      for (int64_t t = 0; t < p.tokens; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(y[t * rows + r], dot(cols, p.Row(r), p.Act(t))) << Where(p, r, t);
        }
      }
    }
  }
}

TEST_P(GemmPacked, Avx2EqualsRowWiseReferenceOnOddTokensAndTailRows) {
  if (HostCpu().Level() < IsaLevel::kAvx2) GTEST_SKIP() << "no AVX2 here";
  const TensorType type = GetParam();
  const GemmPackedFn gemm = GetGemmPackedAt(type, IsaLevel::kAvx2);
  const VecDotFn dot = GetVecDotAt(type, IsaLevel::kScalar);
  ASSERT_NE(gemm, nullptr);
  uint32_t seed = 100;
  for (int64_t cols : Columns(type)) {
    for (int64_t tokens : {1, 2, 3, 4, 5, 17, 70}) {
      const int64_t rows = tokens % 2 == 0 ? 16 : 21;  // 21: a group of 5 real rows
      const Problem p = MakeProblem(type, rows, cols, tokens, seed++);
      const auto packed = Pack(p);
      std::vector<float> y(p.tokens * rows);
      gemm(packed->matrix(), 0, rows, p.Activations(), y.data(), rows);
      for (int64_t t = 0; t < p.tokens; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(y[t * rows + r], dot(cols, p.Row(r), p.Act(t))) << Where(p, r, t);
        }
      }
    }
  }
}

// The AVX-512 VNNI kernels work on pairs of groups: row counts with an odd
// number of groups (a lone last group) and a part-filled last group; token
// counts on both sides of 16 (2 to 16: one group at a time against the
// few-token table, in passes of 8; past it, a pair's quants copied to the
// pair buffer), and one token, where every group runs alone against the
// activation table.
void ExpectPairedGroupsEqualRowWiseReference(TensorType type, GemmPackedFn gemm) {
  ASSERT_NE(gemm, nullptr) << "the VNNI kernel is not built";
  ASSERT_NE(gemm, GetGemmPackedAt(type, IsaLevel::kAvx2)) << "the VNNI kernel is not built";
  const VecDotFn dot = GetVecDotAt(type, IsaLevel::kScalar);
  uint32_t seed = 300;
  for (int64_t cols : Columns(type)) {
    for (int64_t tokens : {1, 2, 3, 5, 8, 9, 16, 17, 70}) {
      for (int64_t rows : {16, 21, 40, 45}) {
        const Problem p = MakeProblem(type, rows, cols, tokens, seed++);
        const auto packed = Pack(p);
        std::vector<float> y(p.tokens * rows);
        gemm(packed->matrix(), 0, rows, p.Activations(), y.data(), rows);
        for (int64_t t = 0; t < p.tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(y[t * rows + r], dot(cols, p.Row(r), p.Act(t))) << Where(p, r, t);
          }
        }
      }
    }
  }
}

TEST_P(GemmPacked, Avx512VnniEqualsRowWiseReferenceOnOddTokensAndTailRows) {
  if (HostCpu().Level() < IsaLevel::kAvx512Vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI here: " << HostCpu().ToString()
                 << " (EmulatedAvx512Vnni... tests the same kernels)";
  }
  ExpectPairedGroupsEqualRowWiseReference(GetParam(),
                                          GetGemmPackedAt(GetParam(), IsaLevel::kAvx512Vnni));
}

TEST_P(GemmPacked, EmulatedAvx512VnniEqualsRowWiseReferenceOnOddTokensAndTailRows) {
  ExpectPairedGroupsEqualRowWiseReference(GetParam(),
                                          internal::EmulatedAvx512VnniGemmPacked(GetParam()));
}

// The AMX kernels (gemm_packed_amx.cc) read the VNNI kernels' pair buffer
// as tiles of 16 tokens: token counts below one tile (the VNNI kernel runs),
// at it, past it and past the 64-token chunk, not multiples of 16 (the last
// tile moves back over tokens already done); rows with a lone last group and
// a part-filled one; several blocks and super-blocks; and a row range inside
// groups written to a wider y. Every output must equal RefVecDot of its row,
// and so the VNNI kernel's, bit for bit.
const TensorType kAmxTypes[] = {TensorType::kQ8_0,   TensorType::kQ5_0, TensorType::kQ4_0,
                                TensorType::kIQ4_NL, TensorType::kQ5_1, TensorType::kQ4_1,
                                TensorType::kQ4_K,   TensorType::kQ5_K, TensorType::kQ6_K};

bool HasAmxKernel(TensorType type) {
  return std::find(std::begin(kAmxTypes), std::end(kAmxTypes), type) != std::end(kAmxTypes);
}

void ExpectAmxEqualsRowWiseReference(TensorType type, GemmPackedFn gemm) {
  ASSERT_NE(gemm, nullptr) << "the AMX kernel is not built";
  const VecDotFn dot = GetVecDotAt(type, IsaLevel::kScalar);
  const std::vector<int64_t> all = Columns(type);
  uint32_t seed = 500;
  for (int64_t cols : {all[1], all[2]}) {
    for (int64_t tokens : {1, 15, 16, 17, 33, 70}) {
      for (int64_t rows : {16, 21, 40}) {
        const Problem p = MakeProblem(type, rows, cols, tokens, seed++);
        const auto packed = Pack(p);
        std::vector<float> y(p.tokens * rows);
        gemm(packed->matrix(), 0, rows, p.Activations(), y.data(), rows);
        for (int64_t t = 0; t < p.tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(y[t * rows + r], dot(cols, p.Row(r), p.Act(t))) << Where(p, r, t);
          }
        }
      }
    }
  }
  const Problem p = MakeProblem(type, 29, all[1], 20, seed);
  const auto packed = Pack(p);
  const int64_t begin = 3, end = 27, stride = 40;
  std::vector<float> y(p.tokens * stride, -1234.5f);
  gemm(packed->matrix(), begin, end, p.Activations(), y.data(), stride);
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t k = 0; k < stride; ++k) {
      const float got = y[t * stride + k];
      if (k >= end - begin) {
        ASSERT_EQ(got, -1234.5f) << "wrote past the range at k=" << k;
        continue;
      }
      ASSERT_EQ(got, dot(p.cols, p.Row(begin + k), p.Act(t))) << Where(p, begin + k, t);
    }
  }
}

TEST_P(GemmPacked, AmxEqualsRowWiseReferenceOnOddTokensAndTailRows) {
  const TensorType type = GetParam();
  if (!HasAmxKernel(type)) {
    EXPECT_EQ(internal::AmxGemmPacked(type), nullptr);
    EXPECT_EQ(GetGemmPackedAt(type, IsaLevel::kAmx), GetGemmPackedAt(type, IsaLevel::kAvx512Vnni))
        << "a type without an AMX kernel runs the VNNI one";
    return;
  }
  if (HostCpu().Level() < IsaLevel::kAmx) {
    GTEST_SKIP() << "no AMX here (or Linux refused the tile state): " << HostCpu().ToString()
                 << " (EmulatedAmx... tests the same kernels)";
  }
  ExpectAmxEqualsRowWiseReference(type, GetGemmPackedAt(type, IsaLevel::kAmx));
}

TEST_P(GemmPacked, EmulatedAmxEqualsRowWiseReferenceOnOddTokensAndTailRows) {
  const TensorType type = GetParam();
  if (!HasAmxKernel(type)) {
    EXPECT_EQ(internal::EmulatedAmxGemmPacked(type), nullptr);
    return;
  }
  ExpectAmxEqualsRowWiseReference(type, internal::EmulatedAmxGemmPacked(type));
}

// A row range that starts and ends inside groups, written to a wider y: only
// the requested rows are written, each where the contract says.
TEST_P(GemmPacked, UnalignedRowRangeWritesOnlyItsRows) {
  const TensorType type = GetParam();
  const int64_t cols = quant::Traits(type).block_elems == 32 ? 640 : 1024;
  for (int64_t tokens : {1, 5, 11}) {  // one token, one register tile, pairs
    const Problem p = MakeProblem(type, 29, cols, tokens, 7);
    const auto packed = Pack(p);
    const VecDotFn dot = GetVecDotAt(type, IsaLevel::kScalar);
    for (IsaLevel level : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512Vnni}) {
      if (HostCpu().Level() < level) continue;
      const GemmPackedFn gemm = GetGemmPackedAt(type, level);
      const int64_t begin = 3, end = 27, stride = 40;
      std::vector<float> y(p.tokens * stride, -1234.5f);
      gemm(packed->matrix(), begin, end, p.Activations(), y.data(), stride);
      for (int64_t t = 0; t < p.tokens; ++t) {
        for (int64_t k = 0; k < stride; ++k) {
          const float got = y[t * stride + k];
          if (k >= end - begin) {
            ASSERT_EQ(got, -1234.5f) << "wrote past the range at k=" << k;
            continue;
          }
          ASSERT_EQ(got, dot(cols, p.Row(begin + k), p.Act(t))) << Where(p, begin + k, t);
        }
      }
    }
  }
}

// UnpackRow gives back every stored row byte for byte, the tail group's
// included (29 rows: the last group holds 5), K-quant scales and all.
TEST_P(GemmPacked, UnpackRowGivesBackTheStoredRows) {
  const TensorType type = GetParam();
  for (int64_t cols : Columns(type)) {
    const Problem p = MakeProblem(type, 29, cols, 1, 11);
    const auto packed = Pack(p);
    std::vector<uint8_t> row(p.row_bytes + 1, 0xa5);
    for (int64_t r = 0; r < p.rows; ++r) {
      UnpackRow(packed->matrix(), r, row.data());
      ASSERT_EQ(std::memcmp(row.data(), p.Row(r), p.row_bytes), 0) << Where(p, r, 0);
      ASSERT_EQ(row[p.row_bytes], 0xa5) << "wrote past the row: " << Where(p, r, 0);
    }
  }
}

// Packed weights cost what the file's blocks cost: each stored group is
// within 3% of its eight rows in GGUF (plus the 64-byte alignment of each of
// the Q8_0 family's scale tables: Q4_1 and Q5_1 have two), so decode
// streams no more bytes than the file holds.
TEST_P(GemmPacked, StoredGroupIsAboutTheSizeOfItsRows) {
  const TensorType type = GetParam();
  const double padding = internal::HasMins32(type) ? 128 : 64;
  for (int64_t cols : Columns(type)) {
    const double rows_bytes = 8.0 * static_cast<double>(quant::RowBytes(quant::Traits(type), cols));
    EXPECT_LE(static_cast<double>(PackedGroupBytes(type, cols)), rows_bytes * 1.03 + padding)
        << quant::TypeName(type) << " cols=" << cols;
    EXPECT_GE(static_cast<double>(PackedGroupBytes(type, cols)), rows_bytes)
        << quant::TypeName(type) << " cols=" << cols;
  }
}

// Every level's expansion of the stored layout writes the scalar
// expansion's bytes (the GEMM tests above check that layout's meaning).
TEST_P(GemmPacked, ExpansionsEqualTheReferenceExpansion) {
  const TensorType type = GetParam();
  if (!internal::IsCompact(type)) {
    EXPECT_EQ(PackedGroupBytes(type, 640), internal::WideGroupBytes(type, 640));
    return;
  }
  // AVX-512 kernels use the AVX2 expansion.
  const std::vector<std::pair<std::string, internal::ExpandFn>> levels = {
      {"avx2", internal::Avx2ExpandGroup}};
  for (int64_t cols : Columns(type)) {
    const Problem p = MakeProblem(type, 21, cols, 1, 17);
    const auto packed = Pack(p);
    const PackedMatrix& m = packed->matrix();
    const size_t wide_bytes = internal::WideGroupBytes(type, cols);
    std::vector<uint8_t> want(wide_bytes);
    for (int64_t g = 0; g < m.groups(); ++g) {
      internal::RefExpandGroup(type, m.Group(g), cols, want.data());
      for (const auto& [name, expand] : levels) {
        ASSERT_NE(expand, nullptr) << name;
        alignas(64) static uint8_t got[2 * 64 * 1024];
        ASSERT_LE(wide_bytes, sizeof(got));
        std::memset(got, 0xa5, wide_bytes);
        expand(type, m.Group(g), cols, got);
        ASSERT_EQ(std::memcmp(got, want.data(), wide_bytes), 0)
            << name << " " << quant::TypeName(type) << " cols=" << cols << " group=" << g;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemmPacked, ::testing::ValuesIn(kTypes),
                         [](const auto& p) { return std::string(quant::TypeName(p.param)); });

}  // namespace
}  // namespace ellm::kernels

// Our scalar decoders and activation encoders against golden files made by
// an independent implementation (the gguf Python package; see
// make_reference.py beside this file for how, and for the file layout).
// Decoding must match bit for bit and encoding byte for byte: both sides do
// the same IEEE single-precision operations in the same order, so any
// difference is a bug, not noise.
#include <gtest/gtest.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/quant.h"
#include "test_env.h"

namespace ellm::quant {
namespace {

struct Golden {
  TensorType type;
  uint32_t n_elems = 0;
  std::vector<uint8_t> bytes;  // the stored row (decode) or expected encoding
  std::vector<float> floats;   // expected decode, or encoder input
};

uint32_t ReadU32(const std::vector<char>& buf, size_t off) {
  uint32_t v;
  std::memcpy(&v, buf.data() + off, sizeof(v));
  return v;
}

// Reads testdata/<kind>_<name>.bin. The two kinds differ only in magic and
// in whether the bytes or the floats come first.
::testing::AssertionResult LoadGolden(const std::string& kind, TensorType type, Golden* out) {
  std::string name(TypeName(type));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string path =
      ellm::testing::SourceDir() + "/tests/engine/quant/testdata/" + kind + "_" + name + ".bin";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ::testing::AssertionFailure()
           << "cannot open " << path << " (run tests/engine/quant/make_reference.py)";
  }
  const std::vector<char> buf((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  const bool decode = kind == "decode";
  if (buf.size() < 20 || std::memcmp(buf.data(), decode ? "ELQD" : "ELQQ", 4) != 0 ||
      ReadU32(buf, 4) != 1) {
    return ::testing::AssertionFailure() << path << ": bad magic or version";
  }
  if (ReadU32(buf, 8) != static_cast<uint32_t>(type)) {
    return ::testing::AssertionFailure() << path << ": type id " << ReadU32(buf, 8);
  }
  out->type = type;
  out->n_elems = ReadU32(buf, 12);
  const uint32_t n_bytes = ReadU32(buf, 16);
  if (buf.size() != 20 + n_bytes + 4ull * out->n_elems) {
    return ::testing::AssertionFailure() << path << ": size " << buf.size();
  }
  const char* bytes_at = buf.data() + 20 + (decode ? 0 : 4ull * out->n_elems);
  const char* floats_at = buf.data() + 20 + (decode ? n_bytes : 0);
  out->bytes.assign(bytes_at, bytes_at + n_bytes);
  out->floats.resize(out->n_elems);
  std::memcpy(out->floats.data(), floats_at, 4ull * out->n_elems);
  if (RowBytes(Traits(type), out->n_elems) != n_bytes) {
    return ::testing::AssertionFailure()
           << path << ": " << n_bytes << " bytes for " << out->n_elems;
  }
  return ::testing::AssertionSuccess();
}

class DecodeGolden : public ::testing::TestWithParam<TensorType> {};

TEST_P(DecodeGolden, MatchesGgufBitForBit) {
  Golden g;
  ASSERT_TRUE(LoadGolden("decode", GetParam(), &g));
  ASSERT_TRUE(CanDequantize(g.type));
  std::vector<float> got(g.n_elems, -12345.0f);
  DequantizeRow(g.type, g.bytes.data(), got.data(), g.n_elems);
  int mismatches = 0;
  for (uint32_t i = 0; i < g.n_elems && mismatches < 10; ++i) {
    const float want = g.floats[i];
    // NaN payloads are not part of the contract (F16C and numpy quiet them).
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
      continue;
    }
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want)) {
      ++mismatches;
      ADD_FAILURE() << TypeName(g.type) << " element " << i << " (block "
                    << i / Traits(g.type).block_elems << "): got " << got[i] << ", want " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DecodeGolden,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                           TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                                           TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ2_K,
                                           TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                                           TensorType::kQ6_K, TensorType::kQ8_K,
                                           TensorType::kIQ4_NL, TensorType::kIQ4_XS),
                         [](const auto& param_info) {
                           return std::string(TypeName(param_info.param));
                         });

class EncodeGolden : public ::testing::TestWithParam<TensorType> {};

TEST_P(EncodeGolden, MatchesReferenceByteForByte) {
  Golden g;
  ASSERT_TRUE(LoadGolden("quantize", GetParam(), &g));
  std::vector<uint8_t> got(g.bytes.size(), 0xAA);
  QuantizeRow(g.type, g.floats.data(), got.data(), g.n_elems);
  const uint32_t block_bytes = Traits(g.type).block_bytes;
  int mismatches = 0;
  for (size_t i = 0; i < got.size() && mismatches < 10; ++i) {
    if (got[i] != g.bytes[i]) {
      ++mismatches;
      ADD_FAILURE() << TypeName(g.type) << " byte " << i % block_bytes << " of block "
                    << i / block_bytes << ": got " << int{got[i]} << ", want " << int{g.bytes[i]};
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllActivationFormats, EncodeGolden,
                         ::testing::Values(TensorType::kQ8_0, TensorType::kQ8_1, TensorType::kQ8_K,
                                           TensorType::kF16, TensorType::kBF16),
                         [](const auto& param_info) {
                           return std::string(TypeName(param_info.param));
                         });

TEST(QuantFormats, BlockStructsMatchTraitsTable) {
  EXPECT_EQ(sizeof(BlockQ4_0), Traits(TensorType::kQ4_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_1), Traits(TensorType::kQ4_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_0), Traits(TensorType::kQ5_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_1), Traits(TensorType::kQ5_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_0), Traits(TensorType::kQ8_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_1), Traits(TensorType::kQ8_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ2_K), Traits(TensorType::kQ2_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ3_K), Traits(TensorType::kQ3_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_K), Traits(TensorType::kQ4_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_K), Traits(TensorType::kQ5_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ6_K), Traits(TensorType::kQ6_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_K), Traits(TensorType::kQ8_K).block_bytes);
  EXPECT_EQ(sizeof(BlockIq4Nl), Traits(TensorType::kIQ4_NL).block_bytes);
  EXPECT_EQ(sizeof(BlockIq4Xs), Traits(TensorType::kIQ4_XS).block_bytes);
  EXPECT_EQ(kQkK, static_cast<int>(Traits(TensorType::kQ4_K).block_elems));
}

TEST(QuantFormats, ActivationTypesFollowGgml) {
  using T = TensorType;
  EXPECT_EQ(ActivationTypeFor(T::kQ8_0), T::kQ8_0);
  EXPECT_EQ(ActivationTypeFor(T::kQ4_0), T::kQ8_0);
  EXPECT_EQ(ActivationTypeFor(T::kQ5_0), T::kQ8_0);
  EXPECT_EQ(ActivationTypeFor(T::kQ4_1), T::kQ8_1);
  EXPECT_EQ(ActivationTypeFor(T::kQ5_1), T::kQ8_1);
  for (T t : {T::kQ2_K, T::kQ3_K, T::kQ4_K, T::kQ5_K, T::kQ6_K}) {
    EXPECT_EQ(ActivationTypeFor(t), T::kQ8_K) << TypeName(t);
  }
  EXPECT_EQ(ActivationTypeFor(T::kF16), T::kF16);
  EXPECT_EQ(ActivationTypeFor(T::kBF16), T::kBF16);
  EXPECT_EQ(ActivationTypeFor(T::kF32), T::kF32);
  EXPECT_EQ(ActivationTypeFor(T::kIQ2_XXS), T::kF32);  // no dot product: decode, then F32
}

TEST(QuantFormats, CanDequantizeOnlyImplementedFormats) {
  EXPECT_TRUE(CanDequantize(TensorType::kQ6_K));
  EXPECT_TRUE(CanDequantize(TensorType::kQ8_1));
  EXPECT_TRUE(CanDequantize(TensorType::kIQ4_NL));
  EXPECT_TRUE(CanDequantize(TensorType::kIQ4_XS));
  EXPECT_FALSE(CanDequantize(TensorType::kIQ2_XXS));
  EXPECT_FALSE(CanDequantize(TensorType::kI32));
  EXPECT_FALSE(CanDequantize(TensorType::kMXFP4));
}

}  // namespace
}  // namespace ellm::quant

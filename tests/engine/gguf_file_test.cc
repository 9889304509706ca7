#include "ellm/engine/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <list>

#include "gguf_builder.h"
#include "test_env.h"

namespace ellm::gguf {
namespace {

using ::ellm::testing::GgufBuilder;

constexpr uint32_t kF32 = 0, kQ8_0 = 8;

GgufBuilder ValidBuilder() {
  GgufBuilder b;
  b.Str("general.architecture", "gemma3")
      .U32("gemma3.block_count", 2)
      .F32("gemma3.rope.freq_base", 10000.0f)
      .Bool("gemma3.flag", true)
      .I32("gemma3.signed", -7)
      .StrArray("tokenizer.ggml.tokens", {"<pad>", "<eos>", "a", ""})
      .I32Array("tokenizer.ggml.token_type", {3, 3, 1, 1});
  std::vector<uint8_t> f32(4 * 8 * 4);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<uint8_t>(i);
  b.Tensor("a.weight", {8, 4}, kF32, f32);
  b.Tensor("b.weight", {32, 2}, kQ8_0, std::vector<uint8_t>(2 * 34, 1));
  return b;
}

// GgufFile::Parse keeps views into its input; the buffers live as long as the test binary.
StatusOr<GgufFile> ParseBytes(std::vector<uint8_t> bytes) {
  static std::list<std::vector<uint8_t>> keep;
  keep.push_back(std::move(bytes));
  return GgufFile::Parse(std::span<const uint8_t>(keep.back().data(), keep.back().size()),
                         "test.gguf");
}

TEST(GgufFile, ParsesEveryFieldOfAValidFile) {
  auto f = ParseBytes(ValidBuilder().Build());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(*f->GetString("general.architecture"), "gemma3");
  EXPECT_EQ(*f->GetUint("gemma3.block_count"), 2u);
  EXPECT_FLOAT_EQ(static_cast<float>(*f->GetFloat("gemma3.rope.freq_base")), 10000.0f);
  EXPECT_TRUE(*f->GetBool("gemma3.flag"));
  EXPECT_EQ(*f->GetInt("gemma3.signed"), -7);
  auto tokens = f->GetArray("tokenizer.ggml.tokens", ValueType::kString);
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ((*tokens)->strings.size(), 4u);
  EXPECT_EQ((*tokens)->strings[1], "<eos>");
  EXPECT_EQ((*tokens)->strings[3], "");
  auto types = f->GetArray("tokenizer.ggml.token_type", ValueType::kInt32);
  ASSERT_TRUE(types.ok());
  EXPECT_EQ((*types)->count, 4u);

  ASSERT_EQ(f->tensors().size(), 2u);
  const TensorInfo* a = f->FindTensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->n_dims, 2);
  EXPECT_EQ(a->ne[0], 8);
  EXPECT_EQ(a->ne[1], 4);
  EXPECT_EQ(a->n_bytes, 128u);
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->data[5], 5);
  const TensorInfo* b = f->FindTensor("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, quant::TensorType::kQ8_0);
  EXPECT_EQ(b->n_bytes, 68u);
  EXPECT_EQ(b->offset % f->alignment(), 0u);
}

TEST(GgufFile, TypedGettersNameKeyAndTypes) {
  auto bytes = ValidBuilder().Build();
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok());
  auto missing = f->GetUint("gemma3.embedding_length");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("gemma3.embedding_length"), std::string::npos);
  auto wrong = f->GetString("gemma3.block_count");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("uint32"), std::string::npos);
  EXPECT_FALSE(f->GetUint("gemma3.signed").ok());  // negative does not fit
  EXPECT_FALSE(f->GetArray("tokenizer.ggml.tokens", ValueType::kInt32).ok());
}

TEST(GgufFile, RejectsBadMagic) {
  auto bytes = ValidBuilder().Build();
  bytes[0] = 'X';
  auto f = ParseBytes(bytes);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("bad magic"), std::string::npos);
  EXPECT_NE(f.status().message().find("test.gguf"), std::string::npos);
}

TEST(GgufFile, RejectsUnsupportedVersions) {
  for (uint32_t v : {1u, 4u, 0x03000000u}) {
    auto bytes = GgufBuilder(v).Str("k", "v").Build();
    auto f = ParseBytes(bytes);
    ASSERT_FALSE(f.ok()) << v;
    EXPECT_EQ(f.status().code(), StatusCode::kUnimplemented);
  }
  EXPECT_TRUE(ParseBytes(GgufBuilder(2).Str("k", "v").Build()).ok());
}

// Every proper prefix of a valid file is truncated somewhere and must fail
// cleanly; run under ASan this also proves no read past the end.
TEST(GgufFile, RejectsEveryTruncation) {
  auto bytes = ValidBuilder().Build();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    auto f = ParseBytes(cut);
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufFile, RejectsStringLengthPastEnd) {
  GgufBuilder b;
  std::vector<uint8_t> v;
  testing::PutU64(v, 1'000'000);
  v.push_back('x');
  auto f = ParseBytes(b.Raw("general.name", 8, v).Build());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(f.status().message().find("general.name"), std::string::npos);
}

TEST(GgufFile, RejectsHugeArrayCountsWithoutAllocating) {
  for (uint32_t elem : {8u /*string*/, 9u /*array*/, 4u /*u32*/}) {
    std::vector<uint8_t> v;
    testing::PutU32(v, elem);
    testing::PutU64(v, uint64_t{1} << 60);
    auto f = ParseBytes(GgufBuilder().Raw("k.arr", 9, v).Build());
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kOutOfRange) << f.status().ToString();
  }
}

TEST(GgufFile, RejectsDeeplyNestedArrays) {
  std::vector<uint8_t> v;
  for (int d = 0; d < 20; ++d) {
    testing::PutU32(v, 9);
    testing::PutU64(v, 1);
  }
  testing::PutU32(v, 4);
  testing::PutU64(v, 0);
  auto f = ParseBytes(GgufBuilder().Raw("k.nested", 9, v).Build());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("nested"), std::string::npos);
}

TEST(GgufFile, ParsesShallowNestedArrays) {
  std::vector<uint8_t> v;
  testing::PutU32(v, 9);  // array of arrays
  testing::PutU64(v, 2);
  for (uint32_t k = 0; k < 2; ++k) {
    testing::PutU32(v, 4);
    testing::PutU64(v, 1);
    testing::PutU32(v, 40 + k);
  }
  auto f = ParseBytes(GgufBuilder().Raw("k.nested", 9, v).Build());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto a = f->GetArray("k.nested", ValueType::kArray);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ((*a)->arrays.size(), 2u);
  EXPECT_EQ((*a)->arrays[1].array->count, 1u);
}

TEST(GgufFile, RejectsUnknownValueAndTensorTypes) {
  auto f = ParseBytes(GgufBuilder().Raw("k", 13, {0, 0, 0, 0}).Build());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("unknown value type 13"), std::string::npos);

  auto g = ParseBytes(
      GgufBuilder().Tensor("t", {4}, 5 /*retired Q4_2*/, std::vector<uint8_t>(16)).Build());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("unknown tensor type id 5"), std::string::npos);
  EXPECT_NE(g.status().message().find("'t'"), std::string::npos);
}

TEST(GgufFile, RejectsTensorDataOutsideFile) {
  auto bytes = GgufBuilder().Tensor("t", {8}, kF32, std::vector<uint8_t>(32), 4096).Build();
  auto f = ParseBytes(bytes);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(f.status().message().find("tensor 't'"), std::string::npos);

  auto small = GgufBuilder().Tensor("big", {1024}, kF32, std::vector<uint8_t>(32)).Build();
  EXPECT_FALSE(ParseBytes(small).ok());
}

TEST(GgufFile, RejectsOverflowingAndInvalidShapes) {
  uint64_t huge = uint64_t{1} << 40;
  auto f = ParseBytes(GgufBuilder().Tensor("t", {huge, huge}, kF32, {}).Build());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("overflow"), std::string::npos);
  EXPECT_FALSE(ParseBytes(GgufBuilder().Tensor("z", {0}, kF32, {}).Build()).ok());
  EXPECT_FALSE(
      ParseBytes(GgufBuilder().Tensor("d", {1, 1, 1, 1, 1}, kF32, std::vector<uint8_t>(4)).Build())
          .ok());
  auto blocks =
      ParseBytes(GgufBuilder().Tensor("q", {33}, kQ8_0, std::vector<uint8_t>(68)).Build());
  ASSERT_FALSE(blocks.ok());
  EXPECT_NE(blocks.status().message().find("block size 32"), std::string::npos);
}

TEST(GgufFile, RejectsDuplicatesAndMisalignment) {
  EXPECT_FALSE(ParseBytes(GgufBuilder().U32("k", 1).U32("k", 2).Build()).ok());
  EXPECT_FALSE(ParseBytes(GgufBuilder()
                              .Tensor("t", {8}, kF32, std::vector<uint8_t>(32))
                              .Tensor("t", {8}, kF32, std::vector<uint8_t>(32))
                              .Build())
                   .ok());
  auto mis = ParseBytes(GgufBuilder().Tensor("t", {8}, kF32, std::vector<uint8_t>(64), 4).Build());
  ASSERT_FALSE(mis.ok());
  EXPECT_NE(mis.status().message().find("alignment"), std::string::npos);
  auto bad_align = ParseBytes(GgufBuilder().U32("general.alignment", 24).Build());
  ASSERT_FALSE(bad_align.ok());
  EXPECT_NE(bad_align.status().message().find("power of two"), std::string::npos);
}

TEST(GgufFile, HonoursCustomAlignment) {
  GgufBuilder b;
  b.Alignment(64)
      .Tensor("t", {8}, kF32, std::vector<uint8_t>(32, 7))
      .Tensor("u", {8}, kF32, std::vector<uint8_t>(32, 9));
  auto bytes = b.Build();
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->FindTensor("u")->offset, 64u);
  EXPECT_EQ(f->FindTensor("u")->data[0], 9);
}

TEST(GgufFile, OpenNamesMissingAndNonRegularFiles) {
  auto missing = GgufFile::Open("/nonexistent/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/model.gguf"), std::string::npos);
  EXPECT_FALSE(GgufFile::Open("/tmp").ok());
}

TEST(GgufFile, OpenMapsAFileFromDisk) {
  std::string dir = ::ellm::testing::MakeTempDir("ellm-gguf");
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/tiny.gguf";
  ASSERT_TRUE(ValidBuilder().WriteTo(path));
  {
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    GgufFile moved = std::move(f).value();  // views survive a move
    EXPECT_EQ(*moved.GetString("general.architecture"), "gemma3");
    EXPECT_EQ(moved.FindTensor("a.weight")->data[3], 3);
  }
  std::filesystem::remove_all(dir);
}

// Random byte flips over a valid file: must never crash; under ASan/UBSan
// this is a cheap deterministic fuzz pass alongside the libFuzzer target.
TEST(GgufFile, SurvivesRandomCorruption) {
  auto bytes = ValidBuilder().Build();
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto copy = bytes;
    int flips = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < flips; ++k) copy[next() % copy.size()] = static_cast<uint8_t>(next());
    auto f = GgufFile::Parse(std::span<const uint8_t>(copy.data(), copy.size()), "fuzz.gguf");
    if (f.ok()) {
      ++parsed;
      for (const auto& t : f->tensors()) {
        ASSERT_GE(t.data, copy.data());
        ASSERT_LE(t.data + t.n_bytes, copy.data() + copy.size());
      }
    }
  }
  EXPECT_LT(parsed, 3000);  // corruption is noticed at least sometimes
}

}  // namespace
}  // namespace ellm::gguf

// Model::Load on small synthetic Gemma 3 files: a complete one loads with
// the recipe worked out; each kind of damage is a clear error naming it.
#include "model/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <list>

#include "gguf_builder.h"

namespace ellm::model {
namespace {

using ::ellm::testing::GgufBuilder;

constexpr uint32_t kF32 = 0;
constexpr int kEmbd = 64, kFf = 128, kHead = 2, kHeadKv = 1, kHeadDim = 32, kVocab = 16,
              kLayers = 7;

struct Options {
  std::string skip;     // tensor name to leave out
  std::string reshape;  // tensor name to give a wrong shape
  std::string arch = "gemma3";
  std::function<void(GgufBuilder&)> extra_keys;
};

std::vector<uint8_t> F32s(size_t n, float v) {
  std::vector<uint8_t> b(n * 4);
  for (size_t i = 0; i < n; ++i) std::memcpy(b.data() + i * 4, &v, 4);
  return b;
}

StatusOr<std::unique_ptr<Model>> Build(const Options& o) {
  GgufBuilder b;
  b.Str("general.architecture", o.arch)
      .U32("gemma3.block_count", kLayers)
      .U32("gemma3.embedding_length", kEmbd)
      .U32("gemma3.feed_forward_length", kFf)
      .U32("gemma3.attention.head_count", kHead)
      .U32("gemma3.attention.head_count_kv", kHeadKv)
      .U32("gemma3.attention.key_length", kHeadDim)
      .U32("gemma3.attention.value_length", kHeadDim)
      .U32("gemma3.context_length", 1024)
      .U32("gemma3.attention.sliding_window", 8)
      .F32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f)
      .F32("gemma3.rope.freq_base", 1e6f);
  if (o.extra_keys) o.extra_keys(b);
  auto add = [&](const std::string& name, std::vector<uint64_t> shape) {
    if (name == o.skip) return;
    if (name == o.reshape) shape[0] += 1;
    size_t n = 1;
    for (uint64_t d : shape) n *= d;
    b.Tensor(name, shape, kF32, F32s(n, 0.5f));
  };
  add("token_embd.weight", {kEmbd, kVocab});
  add("output_norm.weight", {kEmbd});
  for (int il = 0; il < kLayers; ++il) {
    std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", {kEmbd});
    add(p + "attn_q.weight", {kEmbd, kHead * kHeadDim});
    add(p + "attn_k.weight", {kEmbd, kHeadKv * kHeadDim});
    add(p + "attn_v.weight", {kEmbd, kHeadKv * kHeadDim});
    add(p + "attn_output.weight", {kHead * kHeadDim, kEmbd});
    add(p + "attn_q_norm.weight", {kHeadDim});
    add(p + "attn_k_norm.weight", {kHeadDim});
    add(p + "post_attention_norm.weight", {kEmbd});
    add(p + "ffn_norm.weight", {kEmbd});
    add(p + "ffn_gate.weight", {kEmbd, kFf});
    add(p + "ffn_up.weight", {kEmbd, kFf});
    add(p + "ffn_down.weight", {kFf, kEmbd});
    add(p + "post_ffw_norm.weight", {kEmbd});
  }
  static std::list<std::vector<uint8_t>> keep;  // Parse keeps views into the bytes
  keep.push_back(b.Build());
  ELLM_ASSIGN_OR_RETURN(
      gguf::GgufFile f,
      gguf::GgufFile::Parse(std::span<const uint8_t>(keep.back().data(), keep.back().size()),
                            "tiny-gemma3.gguf"));
  return Model::Load(std::move(f));
}

TEST(ModelLoad, ResolvesGemma3RecipeFromTheFile) {
  auto m = Build({});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HParams& hp = (*m)->hparams();
  EXPECT_EQ(hp.n_layer, kLayers);
  EXPECT_EQ(hp.n_vocab, kVocab);
  EXPECT_FLOAT_EQ(hp.embedding_scale, 8.0f);  // sqrt(64)
  EXPECT_FLOAT_EQ(hp.query_scale, 1.0f / std::sqrt(32.0f));
  EXPECT_FLOAT_EQ(hp.rope_base_swa, 10000.0f);
  // Pattern 6: layers 5 (and 11, ...) are global.
  for (int il = 0; il < kLayers; ++il) {
    EXPECT_EQ((*m)->layers()[il].sliding, il != 5) << il;
    EXPECT_FLOAT_EQ((*m)->layers()[il].rope.base, il == 5 ? 1e6f : 1e4f);
  }
  // Tied output.
  EXPECT_EQ((*m)->output().data, (*m)->token_embd().data);
  EXPECT_FLOAT_EQ((*m)->layers()[0].q_norm[3], 0.5f);
}

TEST(ModelLoad, HonoursAnExplicitSlidingPattern) {
  auto m = Build({.extra_keys = [](GgufBuilder& b) {
    std::vector<uint8_t> v;
    testing::PutU32(v, 7);  // bool
    testing::PutU64(v, kLayers);
    for (int i = 0; i < kLayers; ++i) v.push_back(i % 2);
    b.Raw("gemma3.attention.sliding_window_pattern", 9, v);
  }});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (int il = 0; il < kLayers; ++il) EXPECT_EQ((*m)->layers()[il].sliding, il % 2 == 1);
}

TEST(ModelLoad, MissingTensorIsNamed) {
  auto m = Build({.skip = "blk.3.ffn_up.weight"});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("blk.3.ffn_up.weight"), std::string::npos);
}

TEST(ModelLoad, MisshapenTensorIsNamedWithBothShapes) {
  auto m = Build({.reshape = "blk.1.attn_k.weight"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.1.attn_k.weight"), std::string::npos);
  EXPECT_NE(m.status().message().find("[65, 32]"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("[64, 32]"), std::string::npos);
}

TEST(ModelLoad, UnknownArchitectureAndMissingKeys) {
  auto arch = Build({.arch = "mamba9"});
  ASSERT_FALSE(arch.ok());
  EXPECT_NE(arch.status().message().find("mamba9"), std::string::npos);
  EXPECT_NE(arch.status().message().find("gemma3"), std::string::npos);
}

TEST(ModelLoad, ExtraKeysAreIgnored) {
  auto m = Build({.extra_keys = [](GgufBuilder& b) { b.U32("gemma3.unused", 1); }});
  ASSERT_TRUE(m.ok()) << m.status().ToString();  // unknown extra keys are fine
}

}  // namespace
}  // namespace ellm::model

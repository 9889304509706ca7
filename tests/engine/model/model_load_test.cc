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

constexpr uint32_t kF32 = 0, kIq4Nl = 20, kIq4Xs = 23;
constexpr int kEmbd = 64, kFf = 128, kHead = 2, kHeadKv = 1, kHeadDim = 32, kVocab = 16,
              kLayers = 7;

struct Options {
  std::string skip;     // tensor name to leave out
  std::string reshape;  // tensor name to give a wrong shape
  std::string arch = "gemma3";
  std::function<void(GgufBuilder&)> extra_keys;
  int ff = kFf;
  uint32_t gate_type = kF32;  // GGML type ids of every layer's ffn_gate and ffn_down
  uint32_t down_type = kF32;
};

// Blocks of a quantized type whose bytes are a fixed pattern and whose f16 d
// (the first two bytes of an IQ4_NL or IQ4_XS block) is 0.01.
std::vector<uint8_t> QuantBlocks(size_t n_elems, uint32_t block_elems, uint32_t block_bytes) {
  std::vector<uint8_t> b(n_elems / block_elems * block_bytes);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 37 + 11);
  for (size_t off = 0; off < b.size(); off += block_bytes) {
    b[off] = 0x1f;  // f16 0x211f ~ 0.01
    b[off + 1] = 0x21;
  }
  return b;
}

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
      .U32("gemma3.feed_forward_length", static_cast<uint32_t>(o.ff))
      .U32("gemma3.attention.head_count", kHead)
      .U32("gemma3.attention.head_count_kv", kHeadKv)
      .U32("gemma3.attention.key_length", kHeadDim)
      .U32("gemma3.attention.value_length", kHeadDim)
      .U32("gemma3.context_length", 1024)
      .U32("gemma3.attention.sliding_window", 8)
      .F32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f)
      .F32("gemma3.rope.freq_base", 1e6f);
  if (o.extra_keys) o.extra_keys(b);
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, uint32_t type = kF32) {
    if (name == o.skip) return;
    if (name == o.reshape) shape[0] += 1;
    size_t n = 1;
    for (uint64_t d : shape) n *= d;
    if (type == kIq4Nl) return b.Tensor(name, shape, type, QuantBlocks(n, 32, 18)), void();
    if (type == kIq4Xs) return b.Tensor(name, shape, type, QuantBlocks(n, 256, 136)), void();
    b.Tensor(name, shape, kF32, F32s(n, 0.5f));
  };
  const uint64_t ff = static_cast<uint64_t>(o.ff);
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
    add(p + "ffn_gate.weight", {kEmbd, ff}, o.gate_type);
    add(p + "ffn_up.weight", {kEmbd, ff});
    add(p + "ffn_down.weight", {ff, kEmbd}, o.down_type);
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

// IQ4_NL and IQ4_XS layer matrices (as in llama.cpp's IQ4_NL / IQ4_XS
// quantizations) load and take the packed GEMM like the other 4-bit types.
TEST(ModelLoad, Iq4LayerWeightsArePacked) {
  auto m = Build({.ff = 256, .gate_type = kIq4Nl, .down_type = kIq4Xs});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (int il = 0; il < kLayers; ++il) {
    const Layer& l = (*m)->layers()[il];
    EXPECT_EQ(l.gate.type, quant::TensorType::kIQ4_NL) << il;
    EXPECT_EQ(l.down.type, quant::TensorType::kIQ4_XS) << il;
    ASSERT_NE(l.gate.packed, nullptr) << il;
    ASSERT_NE(l.down.packed, nullptr) << il;
    EXPECT_EQ(l.gate.packed->matrix().type, quant::TensorType::kIQ4_NL);
    EXPECT_EQ(l.down.packed->matrix().cols, 256);
  }
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

// --- rope.scaling: YaRN and its rarer keys (Model::ReadRopeScaling) ---
// Layer 5 is the synthetic model's one global layer, the one RoPE scaling
// applies to. head_dim 32, base 1e6; an original context of 4096 puts the
// default correction range at pairs [3, 8].

constexpr int kGlobalLayer = 5;
constexpr float kYarnFactor = 4.0f;

// Type yarn, factor 4, original context 4096, then `more`.
std::function<void(GgufBuilder&)> Yarn(std::function<void(GgufBuilder&)> more = nullptr) {
  return [more](GgufBuilder& b) {
    b.Str("gemma3.rope.scaling.type", "yarn")
        .F32("gemma3.rope.scaling.factor", kYarnFactor)
        .U32("gemma3.rope.scaling.original_context_length", 4096);
    if (more) more(b);
  };
}

// The same keys with one rare YaRN key set to `v`.
std::function<void(GgufBuilder&)> YarnWith(const std::string& suffix, float v) {
  return Yarn([suffix, v](GgufBuilder& b) { b.F32("gemma3.rope.scaling." + suffix, v); });
}

// Type linear, factor 4, with one rare YaRN key set to `v`.
std::function<void(GgufBuilder&)> LinearWith(const std::string& suffix, float v) {
  return [suffix, v](GgufBuilder& b) {
    b.Str("gemma3.rope.scaling.type", "linear")
        .F32("gemma3.rope.scaling.factor", kYarnFactor)
        .F32("gemma3.rope.scaling." + suffix, v);
  };
}

// llama.cpp's get_mscale.
float MScale(float scale, float m) {
  return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f;
}

// The length of pair 0 of a unit vector after RoPE with `p` at position 0:
// the magnitude scale ggml_rope_ext applies.
float RopeMagnitude(const ops::RopeParams& p) {
  std::vector<float> x(kHeadDim, 0.0f);
  x[0] = 1.0f;
  ops::Rope(x.data(), 1, kHeadDim, 0, ops::RopePairs::kNeox, p);
  return std::hypot(x[0], x[kHeadDim / 2]);
}

TEST(ModelLoadRopeScaling, YarnDefaultsWithoutTheRareKeys) {
  auto m = Build({.extra_keys = Yarn()});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HParams& hp = (*m)->hparams();
  EXPECT_EQ(hp.yarn_ext_factor, 1.0f);
  EXPECT_EQ(hp.yarn_beta_fast, 32.0f);
  EXPECT_EQ(hp.yarn_beta_slow, 1.0f);
  EXPECT_EQ(hp.yarn_corr_low, 3.0f);
  EXPECT_EQ(hp.yarn_corr_high, 8.0f);
  EXPECT_FLOAT_EQ(hp.yarn_attn_factor, MScale(kYarnFactor, 1.0f) / (1.0f + 0.1f * std::log(4.0f)));
  const ops::RopeParams& rope = (*m)->layers()[kGlobalLayer].rope;
  EXPECT_EQ(rope.ext_factor, 1.0f);
  EXPECT_EQ(rope.corr_low, 3.0f);
  EXPECT_FLOAT_EQ(rope.freq_scale, 0.25f);
  // YaRN's magnitude: 0.1 ln(4) + 1, applied once.
  EXPECT_NEAR(RopeMagnitude(rope), MScale(kYarnFactor, 1.0f), 1e-6f);
  // Sliding layers keep plain RoPE.
  EXPECT_EQ((*m)->layers()[0].rope.ext_factor, 0.0f);
}

// llama.cpp's model saver writes yarn_ext_factor = -1 for "not set", and the
// other keys at their defaults: such a file is the file without them.
TEST(ModelLoadRopeScaling, KeysAtTheirDefaultsChangeNothing) {
  auto plain = Build({.extra_keys = Yarn()});
  auto saved = Build({.extra_keys = Yarn([](GgufBuilder& b) {
                        b.F32("gemma3.rope.scaling.yarn_ext_factor", -1.0f)
                            .F32("gemma3.rope.scaling.yarn_attn_factor", 1.0f)
                            .F32("gemma3.rope.scaling.yarn_beta_fast", 32.0f)
                            .F32("gemma3.rope.scaling.yarn_beta_slow", 1.0f)
                            .F32("gemma3.rope.scaling.yarn_log_multiplier", 0.0f);
                      })});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  const HParams &a = (*plain)->hparams(), &b = (*saved)->hparams();
  EXPECT_EQ(a.rope_freq_scale, b.rope_freq_scale);
  EXPECT_EQ(a.yarn_ext_factor, b.yarn_ext_factor);
  EXPECT_EQ(a.yarn_attn_factor, b.yarn_attn_factor);  // bit for bit
  EXPECT_EQ(a.yarn_corr_low, b.yarn_corr_low);
  EXPECT_EQ(a.yarn_corr_high, b.yarn_corr_high);
}

TEST(ModelLoadRopeScaling, BetasMoveTheCorrectionRange) {
  auto fast = Build({.extra_keys = YarnWith("yarn_beta_fast", 8.0f)});
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  float low = 0, high = 0;
  ops::RopeYarnCorrDims(kHeadDim, 4096, 1e6f, 8.0f, 1.0f, &low, &high);
  EXPECT_EQ(low, 5.0f);
  EXPECT_EQ((*fast)->hparams().yarn_beta_fast, 8.0f);
  EXPECT_EQ((*fast)->layers()[kGlobalLayer].rope.corr_low, low);
  EXPECT_EQ((*fast)->layers()[kGlobalLayer].rope.corr_high, 8.0f);

  auto slow = Build({.extra_keys = YarnWith("yarn_beta_slow", 2.0f)});
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  ops::RopeYarnCorrDims(kHeadDim, 4096, 1e6f, 32.0f, 2.0f, &low, &high);
  EXPECT_EQ(high, 7.0f);
  EXPECT_EQ((*slow)->hparams().yarn_beta_slow, 2.0f);
  EXPECT_EQ((*slow)->layers()[kGlobalLayer].rope.corr_low, 3.0f);
  EXPECT_EQ((*slow)->layers()[kGlobalLayer].rope.corr_high, high);

  // A pair inside the default ramp turns differently once the range moves.
  auto plain = Build({.extra_keys = Yarn()});
  ASSERT_TRUE(plain.ok());
  auto turn = [](const Model& model) {
    std::vector<float> x(kHeadDim, 0.0f);
    x[4] = 1.0f;  // pair 4
    ops::Rope(x.data(), 1, kHeadDim, 1000, ops::RopePairs::kNeox,
              model.layers()[kGlobalLayer].rope);
    return std::atan2(x[4 + kHeadDim / 2], x[4]);
  };
  EXPECT_NE(turn(**plain), turn(**fast));
  EXPECT_NE(turn(**plain), turn(**slow));
}

TEST(ModelLoadRopeScaling, ExtFactorOverridesTheMix) {
  auto half = Build({.extra_keys = YarnWith("yarn_ext_factor", 0.5f)});
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ((*half)->hparams().yarn_ext_factor, 0.5f);
  EXPECT_EQ((*half)->layers()[kGlobalLayer].rope.ext_factor, 0.5f);
  EXPECT_EQ((*half)->hparams().yarn_corr_high, 8.0f);

  // 0 turns YaRN off: plain linear scaling; yarn_attn_factor is then the
  // magnitude (times rope.scaling.attn_factor), as in llama.cpp.
  auto off = Build({.extra_keys = Yarn([](GgufBuilder& b) {
                      b.F32("gemma3.rope.scaling.yarn_ext_factor", 0.0f)
                          .F32("gemma3.rope.scaling.yarn_attn_factor", 0.5f)
                          .F32("gemma3.rope.scaling.attn_factor", 3.0f);
                    })});
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ((*off)->hparams().yarn_ext_factor, 0.0f);
  EXPECT_EQ((*off)->hparams().yarn_corr_low, 0.0f);
  EXPECT_EQ((*off)->hparams().yarn_corr_high, 0.0f);
  EXPECT_EQ((*off)->hparams().rope_freq_scale, 0.25f);
  EXPECT_EQ((*off)->hparams().yarn_attn_factor, 1.5f);
  EXPECT_NEAR(RopeMagnitude((*off)->layers()[kGlobalLayer].rope), 1.5f, 1e-6f);

  // Non-zero turns the ramp on for linear scaling too.
  auto linear = Build({.extra_keys = LinearWith("yarn_ext_factor", 1.0f)});
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  EXPECT_EQ((*linear)->hparams().yarn_ext_factor, 1.0f);
  EXPECT_NE((*linear)->hparams().yarn_corr_high, 0.0f);
}

// With YaRN on, llama.cpp replaces yarn_attn_factor by its mscale; without,
// the key is the magnitude.
TEST(ModelLoadRopeScaling, YarnAttnFactorCountsOnlyWithoutTheRamp) {
  auto on = Build({.extra_keys = YarnWith("yarn_attn_factor", 0.5f)});
  auto plain = Build({.extra_keys = Yarn()});
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*on)->hparams().yarn_attn_factor, (*plain)->hparams().yarn_attn_factor);

  auto linear = Build({.extra_keys = LinearWith("yarn_attn_factor", 0.5f)});
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  EXPECT_EQ((*linear)->hparams().yarn_ext_factor, 0.0f);
  EXPECT_EQ((*linear)->hparams().yarn_attn_factor, 0.5f);
  EXPECT_NEAR(RopeMagnitude((*linear)->layers()[kGlobalLayer].rope), 0.5f, 1e-6f);
}

// transformers' mscale_all_dim: the magnitude becomes mscale(s, 1) / mscale(s, m).
TEST(ModelLoadRopeScaling, LogMultiplierDividesTheMagnitude) {
  constexpr float kM = 0.707f;
  auto m = Build({.extra_keys = YarnWith("yarn_log_multiplier", kM)});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const float want = MScale(kYarnFactor, 1.0f) / MScale(kYarnFactor, kM);
  EXPECT_FLOAT_EQ((*m)->hparams().yarn_attn_factor, want / (1.0f + 0.1f * std::log(kYarnFactor)));
  EXPECT_NEAR(RopeMagnitude((*m)->layers()[kGlobalLayer].rope), want, 1e-6f);
  EXPECT_GT(want, 1.0f);
  EXPECT_LT(want, MScale(kYarnFactor, 1.0f));
  // m = 1 cancels YaRN's magnitude altogether.
  auto one = Build({.extra_keys = YarnWith("yarn_log_multiplier", 1.0f)});
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR(RopeMagnitude((*one)->layers()[kGlobalLayer].rope), 1.0f, 1e-6f);
}

TEST(ModelLoadRopeScaling, BadYarnValuesAreRefusedNamingTheKey) {
  const float kNan = std::nanf(""), kInf = INFINITY;
  struct Case {
    std::string suffix;
    float value;
  };
  std::vector<Case> cases;
  for (const char* k :
       {"yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow", "yarn_log_multiplier"}) {
    for (float v : {kNan, -1.0f, kInf}) cases.push_back({k, v});
  }
  for (float v : {kNan, kInf, -kInf}) cases.push_back({"yarn_ext_factor", v});
  for (const Case& c : cases) {
    auto m = Build({.extra_keys = YarnWith(c.suffix, c.value)});
    ASSERT_FALSE(m.ok()) << c.suffix << " = " << c.value;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().ToString();
    EXPECT_NE(m.status().message().find("gemma3.rope.scaling." + c.suffix), std::string::npos)
        << m.status().message();
  }
}

}  // namespace
}  // namespace ellm::model

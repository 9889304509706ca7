// Model: a GGUF file's weights resolved against its architecture spec —
// hyperparameters read and checked, every tensor found and its shape
// checked, per-layer recipe values (window, RoPE base) worked out. Weights
// stay in the file mapping; only small norm vectors are decoded to f32.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/gguf.h"
#include "model/arch_spec.h"
#include "ops/elementwise.h"
#include "ops/packed_weight.h"
#include "ops/weight.h"

namespace ellm::model {

struct HParams {
  int n_layer = 0;
  int n_embd = 0;
  int n_ff = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-6f;
  float rope_base = 10000.0f;        // global (full-attention) layers
  float rope_base_swa = 10000.0f;    // sliding-window layers
  float rope_freq_scale = 1.0f;      // global layers: 1 / linear scaling factor
  int sliding_window = 0;            // 0 = none
  float final_logit_softcap = 0.0f;  // 0 = off
  float embedding_scale = 1.0f;
  float query_scale = 1.0f;  // applied to Q before attention
  // Granite's multipliers (Multipliers::kFromFile): each sublayer's output
  // is scaled before the residual add; logits are divided by logit_scale.
  float residual_scale = 1.0f;
  float logit_scale = 1.0f;
  int n_rot = 0;       // dimensions rotated per head, the first n_rot (<= head_dim_k)
  int n_ctx_orig = 0;  // rope.scaling.original_context_length (default n_ctx_train)
  // YaRN (rope.scaling.type = yarn), on global layers: ggml_rope_ext's
  // ext_factor (0 = off), attn_factor and correction range in pairs.
  float yarn_ext_factor = 0.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_corr_low = 0.0f, yarn_corr_high = 0.0f;
  // The correction range's ends in rotations (rope.scaling.yarn_beta_fast /
  // yarn_beta_slow; llama.cpp's defaults when absent).
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f;
};

struct Layer {
  ops::Weight q, k, v, o, gate, up, down;
  std::vector<float> attn_norm, q_norm, k_norm, post_attn_norm, ffn_norm, post_ffn_norm;
  // Added to the Q/K/V projections; empty when the family has none.
  std::vector<float> q_bias, k_bias, v_bias;
  bool sliding = false;  // attends to the last `sliding_window` positions only
  // This layer's RoPE; freq_factors points into the Model (rope_freqs()).
  ops::RopeParams rope;
};

class Model {
 public:
  // Takes ownership of the file. Errors name the file and the key or tensor.
  // pack_weights = false checks everything but leaves the weights unpacked
  // (Engine::CheckRuns: a verdict without the cost of repacking).
  static StatusOr<std::unique_ptr<Model>> Load(gguf::GgufFile file, bool pack_weights = true);

  const ArchSpec& spec() const { return *spec_; }
  const HParams& hparams() const { return hp_; }
  const gguf::GgufFile& file() const { return file_; }
  const ops::Weight& token_embd() const { return token_embd_; }
  const ops::Weight& output() const { return output_; }
  const std::vector<float>& output_norm() const { return output_norm_; }
  // Llama 3.1+'s per-pair RoPE frequency divisors; empty when absent.
  const std::vector<float>& rope_freqs() const { return rope_freqs_; }
  const std::vector<Layer>& layers() const { return layers_; }
  // Layer `l`'s RoPE in a session of `n_ctx` positions: l.rope, but for
  // LongRoPE files (Phi 3), whose long divisors replace the short ones when
  // n_ctx exceeds n_ctx_orig, at every position (llama.cpp's
  // llama_model::get_rope_factors chooses by the context size).
  ops::RopeParams RopeFor(const Layer& l, int64_t n_ctx) const;
  const std::vector<std::unique_ptr<ops::PackedWeight>>& packed() const { return packed_; }

 private:
  Model(gguf::GgufFile file) : file_(std::move(file)) {}
  Status ReadHParams();
  Status ReadRopeScaling();
  Status ReadMultipliers();
  Status BindTensors();
  void PackWeights();
  StatusOr<std::vector<bool>> SlidingLayers() const;

  gguf::GgufFile file_;
  const ArchSpec* spec_ = nullptr;
  HParams hp_;
  ops::Weight token_embd_, output_;
  std::vector<float> output_norm_;
  std::vector<float> rope_freqs_;
  std::vector<float> rope_short_, rope_long_;  // LongRoPE's divisors; empty when absent
  std::vector<Layer> layers_;
  std::vector<std::unique_ptr<ops::PackedWeight>> packed_;  // ops::Weight::packed points here
};

}  // namespace ellm::model

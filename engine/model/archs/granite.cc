// Granite 3.x (dense): Llama's block (pre-norm RMSNorm, grouped-query
// attention, SwiGLU, RoPE on adjacent pairs, LLAMA_ROPE_TYPE_NORM) with the
// four muP multipliers the file carries (Multipliers::kFromFile): embeddings
// times granite.embedding_scale, each attention and FFN output times
// granite.residual_scale before its residual add, granite.attention.scale
// as the attention scale, logits divided by granite.logit_scale. Output tied
// to the embeddings when output.weight is absent. llama.cpp:
// src/llama-model.cpp, LLM_ARCH_GRANITE; src/models/granite.cpp. Not run:
// the MoE variants (granitemoe, their own architecture names) and the
// optional attention-output / FFN biases, which Granite 3.x files lack.
#include "model/archs/archs.h"

namespace ellm::model {

const ArchSpec& GraniteSpec() {
  static const ArchSpec spec = {
      .name = "granite",
      .norms = NormPlacement::kPre,
      .activation = FfnActivation::kSilu,
      .rope = RopeStyle::kNormal,
      .window = WindowPattern::kNone,
      .default_window_period = 0,
      .embedding_scale = EmbeddingScale::kNone,
      .multipliers = Multipliers::kFromFile,
      .qk_norm = false,
      .tied_output_fallback = true,
      .default_rope_base_swa = 10000.0,
      .tensors =
          {
              {Role::kTokenEmbd, "token_embd.weight", false, {Dim::kEmbd, Dim::kVocab}, true},
              {Role::kOutputNorm, "output_norm.weight", false, {Dim::kEmbd}, true},
              {Role::kOutput, "output.weight", false, {Dim::kEmbd, Dim::kVocab}, false},
              {Role::kRopeFreqs, "rope_freqs.weight", false, {Dim::kRopeHalf}, false},
              {Role::kAttnNorm, "blk.%d.attn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kAttnQ, "blk.%d.attn_q.weight", true, {Dim::kEmbd, Dim::kQ}, true},
              {Role::kAttnK, "blk.%d.attn_k.weight", true, {Dim::kEmbd, Dim::kKv}, true},
              {Role::kAttnV, "blk.%d.attn_v.weight", true, {Dim::kEmbd, Dim::kVKv}, true},
              {Role::kAttnOutput,
               "blk.%d.attn_output.weight",
               true,
               {Dim::kAttnOut, Dim::kEmbd},
               true},
              {Role::kFfnNorm, "blk.%d.ffn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kFfnGate, "blk.%d.ffn_gate.weight", true, {Dim::kEmbd, Dim::kFf}, true},
              {Role::kFfnUp, "blk.%d.ffn_up.weight", true, {Dim::kEmbd, Dim::kFf}, true},
              {Role::kFfnDown, "blk.%d.ffn_down.weight", true, {Dim::kFf, Dim::kEmbd}, true},
          },
  };
  return spec;
}

}  // namespace ellm::model

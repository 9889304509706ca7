// Gemma 3 (text): sandwich RMSNorms, per-head Q/K RMSNorm, GeGLU with tanh
// GELU, NEOX RoPE with a separate base for sliding-window layers, 5 local
// layers for each global one, embeddings scaled by sqrt(n_embd), output tied
// to the embeddings. Facts: llama.cpp v0.5.0, the numeric reference
// (llama.cpp src/models/gemma3.cpp).
#include "model/archs/archs.h"

namespace ellm::model {

const ArchSpec& Gemma3Spec() {
  static const ArchSpec spec = {
      .name = "gemma3",
      .norms = NormPlacement::kPreAndPost,
      .activation = FfnActivation::kGeluTanh,
      .rope = RopeStyle::kNeox,
      .window = WindowPattern::kEveryNthGlobal,
      .default_window_period = 6,
      .embedding_scale = EmbeddingScale::kSqrtEmbd,
      .query_scale = QueryScale::kGemma3,  // the 27B's 1 / sqrt(n_embd / n_head)
      .qk_norm = true,
      .tied_output_fallback = true,
      .default_rope_base_swa = 10000.0,
      .tensors =
          {
              {Role::kTokenEmbd, "token_embd.weight", false, {Dim::kEmbd, Dim::kVocab}, true},
              {Role::kOutputNorm, "output_norm.weight", false, {Dim::kEmbd}, true},
              {Role::kOutput, "output.weight", false, {Dim::kEmbd, Dim::kVocab}, false},
              {Role::kAttnNorm, "blk.%d.attn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kAttnQ, "blk.%d.attn_q.weight", true, {Dim::kEmbd, Dim::kQ}, true},
              {Role::kAttnK, "blk.%d.attn_k.weight", true, {Dim::kEmbd, Dim::kKv}, true},
              {Role::kAttnV, "blk.%d.attn_v.weight", true, {Dim::kEmbd, Dim::kVKv}, true},
              {Role::kAttnOutput,
               "blk.%d.attn_output.weight",
               true,
               {Dim::kAttnOut, Dim::kEmbd},
               true},
              {Role::kAttnQNorm, "blk.%d.attn_q_norm.weight", true, {Dim::kHeadDimK}, true},
              {Role::kAttnKNorm, "blk.%d.attn_k_norm.weight", true, {Dim::kHeadDimK}, true},
              {Role::kAttnPostNorm, "blk.%d.post_attention_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kFfnNorm, "blk.%d.ffn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kFfnGate, "blk.%d.ffn_gate.weight", true, {Dim::kEmbd, Dim::kFf}, true},
              {Role::kFfnUp, "blk.%d.ffn_up.weight", true, {Dim::kEmbd, Dim::kFf}, true},
              {Role::kFfnDown, "blk.%d.ffn_down.weight", true, {Dim::kFf, Dim::kEmbd}, true},
              {Role::kFfnPostNorm, "blk.%d.post_ffw_norm.weight", true, {Dim::kEmbd}, true},
          },
      .chat = ChatFallback::kGemma,
  };
  return spec;
}

}  // namespace ellm::model

// Phi 3 / 3.5 / Phi-4-mini: pre-norm RMSNorm blocks, grouped-query attention
// from one fused QKV matrix (attn_qkv: Q's rows, then K's, then V's), SwiGLU
// from one fused matrix ("ffn_up": the gate's rows, then up's; there is no
// ffn_gate), RoPE on split halves (LLAMA_ROPE_TYPE_NEOX), partial on
// Phi-4-mini (rope.dimension_count 96 of 128). The 128K models carry
// LongRoPE: rope_factors_short / rope_factors_long, the long set used when a
// session's context exceeds phi3.rope.scaling.original_context_length, and
// phi3.rope.scaling.attn_factor (sqrt(1 + ln(s) / ln(n_ctx_orig)), written
// by convert_hf_to_gguf.py) scaling cos and sin at every context length;
// both are read generically (Model::ReadRopeScaling, Model::RopeFor). The
// file's sliding window is ignored, as llama.cpp disables it for Phi 3.
// Output tied to the embeddings when output.weight is absent (Phi-4-mini).
// llama.cpp: src/llama-model.cpp, LLM_ARCH_PHI3 (get_rope_factors);
// src/models/phi3.cpp; conversion/phi.py.
#include "model/archs/archs.h"

namespace ellm::model {

const ArchSpec& Phi3Spec() {
  static const ArchSpec spec = {
      .name = "phi3",
      .norms = NormPlacement::kPre,
      .activation = FfnActivation::kSilu,
      .rope = RopeStyle::kNeox,
      .window = WindowPattern::kNone,
      .default_window_period = 0,
      .embedding_scale = EmbeddingScale::kNone,
      .qk_norm = false,
      .tied_output_fallback = true,
      .default_rope_base_swa = 10000.0,
      .tensors =
          {
              {Role::kTokenEmbd, "token_embd.weight", false, {Dim::kEmbd, Dim::kVocab}, true},
              {Role::kOutputNorm, "output_norm.weight", false, {Dim::kEmbd}, true},
              {Role::kOutput, "output.weight", false, {Dim::kEmbd, Dim::kVocab}, false},
              {Role::kRopeFactorsShort,
               "rope_factors_short.weight",
               false,
               {Dim::kRopeHalf},
               false},
              {Role::kRopeFactorsLong, "rope_factors_long.weight", false, {Dim::kRopeHalf}, false},
              {Role::kAttnNorm, "blk.%d.attn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kAttnQkv, "blk.%d.attn_qkv.weight", true, {Dim::kEmbd, Dim::kQkv}, true},
              {Role::kAttnOutput,
               "blk.%d.attn_output.weight",
               true,
               {Dim::kAttnOut, Dim::kEmbd},
               true},
              {Role::kFfnNorm, "blk.%d.ffn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kFfnGateUp, "blk.%d.ffn_up.weight", true, {Dim::kEmbd, Dim::kFfPair}, true},
              {Role::kFfnDown, "blk.%d.ffn_down.weight", true, {Dim::kFf, Dim::kEmbd}, true},
          },
  };
  return spec;
}

}  // namespace ellm::model

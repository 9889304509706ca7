// Qwen 3 (dense): Qwen 2's block without the Q/K/V biases, with an RMSNorm
// over each head of Q and of K (attn_q_norm / attn_k_norm, as Gemma 3's)
// applied before RoPE on split halves (LLAMA_ROPE_TYPE_NEOX). The head size
// comes from qwen3.attention.key_length, which need not be n_embd / n_head
// (Qwen3-0.6B: 16 heads of 128 over n_embd 1024). Output tied to the
// embeddings when output.weight is absent. llama.cpp: src/llama-model.cpp,
// LLM_ARCH_QWEN3; src/models/qwen3.cpp.
#include "model/archs/archs.h"

namespace ellm::model {

const ArchSpec& Qwen3Spec() {
  static const ArchSpec spec = {
      .name = "qwen3",
      .norms = NormPlacement::kPre,
      .activation = FfnActivation::kSilu,
      .rope = RopeStyle::kNeox,
      .window = WindowPattern::kNone,
      .default_window_period = 0,
      .embedding_scale = EmbeddingScale::kNone,
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
              {Role::kAttnQNorm, "blk.%d.attn_q_norm.weight", true, {Dim::kHeadDimK}, true},
              {Role::kAttnKNorm, "blk.%d.attn_k_norm.weight", true, {Dim::kHeadDimK}, true},
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

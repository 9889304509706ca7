// Qwen 2 / 2.5: Llama's block (pre-norm RMSNorm, grouped-query attention,
// SwiGLU) with biases on the Q, K and V projections, RoPE on split halves
// (llama.cpp's LLAMA_ROPE_TYPE_NEOX) with the base from the file (1e6 for
// 2.5), and YaRN when the file declares rope.scaling.type = yarn (read for
// every family in Model::ReadHParams). Output tied to the embeddings when
// output.weight is absent (the small models). llama.cpp: src/llama-model.cpp,
// LLM_ARCH_QWEN2; src/models/qwen2.cpp.
#include "model/archs/archs.h"

namespace ellm::model {

const ArchSpec& Qwen2Spec() {
  static const ArchSpec spec = {
      .name = "qwen2",
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
              {Role::kAttnNorm, "blk.%d.attn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kAttnQ, "blk.%d.attn_q.weight", true, {Dim::kEmbd, Dim::kQ}, true},
              {Role::kAttnK, "blk.%d.attn_k.weight", true, {Dim::kEmbd, Dim::kKv}, true},
              {Role::kAttnV, "blk.%d.attn_v.weight", true, {Dim::kEmbd, Dim::kVKv}, true},
              {Role::kAttnQBias, "blk.%d.attn_q.bias", true, {Dim::kQ}, true},
              {Role::kAttnKBias, "blk.%d.attn_k.bias", true, {Dim::kKv}, true},
              {Role::kAttnVBias, "blk.%d.attn_v.bias", true, {Dim::kVKv}, true},
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
      .chat = ChatFallback::kChatMl,
  };
  return spec;
}

}  // namespace ellm::model

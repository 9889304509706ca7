// Llama (2, 3, 3.x): pre-norm RMSNorm blocks, grouped-query attention,
// SwiGLU, RoPE on adjacent pairs (llama.cpp's LLAMA_ROPE_TYPE_NORM), output
// tied to the embeddings when output.weight is absent. Llama 3.1+ carries its
// frequency scaling as rope_freqs.weight: one divisor per rotated pair, which
// ggml_rope_ext applies as theta / factor. Biases on Q/K/V are optional, as
// in llama.cpp (src/llama-model.cpp, LLM_ARCH_LLAMA; src/models/llama.cpp).
#include "model/archs/archs.h"

namespace ellm::model {

const ArchSpec& LlamaSpec() {
  static const ArchSpec spec = {
      .name = "llama",
      .norms = NormPlacement::kPre,
      .activation = FfnActivation::kSilu,
      .rope = RopeStyle::kNormal,
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
              {Role::kRopeFreqs, "rope_freqs.weight", false, {Dim::kRopeHalf}, false},
              {Role::kAttnNorm, "blk.%d.attn_norm.weight", true, {Dim::kEmbd}, true},
              {Role::kAttnQ, "blk.%d.attn_q.weight", true, {Dim::kEmbd, Dim::kQ}, true},
              {Role::kAttnK, "blk.%d.attn_k.weight", true, {Dim::kEmbd, Dim::kKv}, true},
              {Role::kAttnV, "blk.%d.attn_v.weight", true, {Dim::kEmbd, Dim::kVKv}, true},
              {Role::kAttnQBias, "blk.%d.attn_q.bias", true, {Dim::kQ}, false},
              {Role::kAttnKBias, "blk.%d.attn_k.bias", true, {Dim::kKv}, false},
              {Role::kAttnVBias, "blk.%d.attn_v.bias", true, {Dim::kVKv}, false},
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
      .chat = ChatFallback::kLlama3,
  };
  return spec;
}

}  // namespace ellm::model

// An architecture is data: the GGUF architecture name, which metadata keys
// give its hyperparameters, its tensor table (name pattern, shape in terms
// of hyperparameters, required or optional) and recipe enums that the one
// forward pass (model/forward.cc) branches on. One file per family under
// model/archs/, one line in model/archs/registry.cc; no `if (arch == ...)`
// anywhere else.
#pragma once

#include <string_view>
#include <vector>

namespace ellm::model {

// Where the block normalises: before each sublayer (Llama), or before and
// after (Gemma 2/3's "sandwich" norms on attention and FFN outputs).
enum class NormPlacement { kPre, kPreAndPost };
enum class FfnActivation { kGeluTanh, kSilu };  // gated: act(gate(x)) * up(x)
enum class RopeStyle { kNeox, kNormal };        // pairs (i, i+d/2) or (2i, 2i+1)
// Which layers attend only to a sliding window.
enum class WindowPattern {
  kNone,            // every layer full attention
  kEveryNthGlobal,  // layer il is global when il % n == n-1 (n from the file or default)
};
enum class EmbeddingScale { kNone, kSqrtEmbd };  // Gemma multiplies by sqrt(n_embd)
// Multipliers read from the file (Granite 3.x; llama.cpp src/models/granite.cpp):
// <arch>.embedding_scale multiplies the token embeddings, .residual_scale
// each sublayer's output before its residual add, .attention.scale replaces
// 1/sqrt(head_dim), and the logits are divided by .logit_scale (required;
// the others are optional, 0 meaning off, as in llama.cpp).
enum class Multipliers { kNone, kFromFile };
// The chat template of a file whose tokenizer.chat_template is missing or
// not one we recognise (chat.cc DetectChatFormat): the family's own when it
// has one. kLlama3 holds only for a vocabulary with Llama 3's header tokens
// (Llama 2 shares the architecture and has none).
enum class ChatFallback { kNone, kGemma, kChatMl, kLlama3 };
// What Q is multiplied by before attention (Multipliers::kFromFile's
// attention.scale overrides either).
enum class QueryScale {
  kHeadDim,  // 1 / sqrt(head_dim_k)
  // Gemma 3: 1 / sqrt(n_embd / n_head) when the file has 62 layers, else
  // 1 / sqrt(head_dim_k). Gemma 3 27B's query_pre_attn_scalar is
  // n_embd / n_head (5376 / 32 = 168), not its head size (128); the GGUF has
  // no key for it, so llama.cpp (src/models/gemma3.cpp, load_arch_hparams:
  // f_attention_scale for LLM_TYPE_27B, chosen by n_layer == 62) tells the
  // 27B by its layer count, and so must we to compute what it computes.
  // The one place a model's size is read from its layer count: the file
  // gives no other sign.
  kGemma3,
};

// A dimension in a tensor's shape, resolved from the hyperparameters.
enum class Dim {
  kEmbd,      // n_embd
  kFf,        // n_ff
  kVocab,     // vocabulary size (from the tokenizer)
  kQ,         // n_head * head_dim_k
  kKv,        // n_head_kv * head_dim_k
  kVKv,       // n_head_kv * head_dim_v
  kHeadDimK,  // head_dim_k
  kAttnOut,   // n_head * head_dim_v
  kRopeHalf,  // n_rot / 2: one frequency per rotated pair
  kQkv,       // kQ + kKv + kVKv: Q, K and V stacked in one matrix
  kFfPair,    // 2 * n_ff: gate and up stacked in one matrix
};

// The roles a tensor can play; the forward pass looks weights up by role.
enum class Role {
  kTokenEmbd,
  kOutputNorm,
  kOutput,
  kAttnNorm,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kAttnQNorm,
  kAttnKNorm,
  kAttnPostNorm,
  kFfnNorm,
  kFfnGate,
  kFfnUp,
  kFfnDown,
  kFfnPostNorm,
  kAttnQBias,  // added to the projections before RoPE (Qwen 2)
  kAttnKBias,
  kAttnVBias,
  kRopeFreqs,  // Llama 3.1+: per-pair divisors of the RoPE frequencies
  // Phi 3: one matrix whose rows are Q's, then K's, then V's; bound as the
  // three row ranges, so the forward pass sees separate q, k and v.
  kAttnQkv,
  // Phi 3: "ffn_up" holding the gate's rows then the up projection's,
  // split the same way (ggml_swiglu: silu of the first half times the second).
  kFfnGateUp,
  // LongRoPE (Phi 3): two sets of per-pair divisors; the long one applies
  // when a session's context exceeds rope.scaling.original_context_length
  // (llama.cpp llama_model::get_rope_factors).
  kRopeFactorsShort,
  kRopeFactorsLong,
  kCount,
};

struct TensorSpec {
  Role role;
  std::string_view name;  // per-layer names contain "%d" for the layer index
  bool per_layer;
  std::vector<Dim> shape;  // GGML order: shape[0] is the contiguous dimension
  bool required;
};

struct ArchSpec {
  std::string_view name;  // general.architecture
  NormPlacement norms;
  FfnActivation activation;
  RopeStyle rope;
  WindowPattern window;
  int default_window_period;  // for kEveryNthGlobal when the file gives none
  EmbeddingScale embedding_scale;
  Multipliers multipliers = Multipliers::kNone;
  QueryScale query_scale = QueryScale::kHeadDim;
  bool qk_norm;               // RMSNorm over each head of Q and K
  bool tied_output_fallback;  // use token_embd when output.weight is absent
  double default_rope_base_swa;
  std::vector<TensorSpec> tensors;
  ChatFallback chat = ChatFallback::kNone;
};

// The spec for `arch`, or nullptr when no family declares it.
const ArchSpec* FindArch(std::string_view arch);
// Every registered family's name, for error messages.
std::vector<std::string_view> KnownArchs();

}  // namespace ellm::model

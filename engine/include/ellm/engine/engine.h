// The engine's public face: load a model, open sessions, evaluate tokens.
//
//   auto engine = Engine::Load("model.gguf", {.threads = 2});
//   auto session = (*engine)->NewSession({.n_ctx = 8192});
//   auto ids = (*engine)->tokenizer().Encode(text, true, false);
//   (*session)->Eval(ids, LogitsFor::kLast, [&](int64_t i, std::span<const float> logits) {...});
//
// Thread safety: an Engine may serve several Sessions, but Eval calls are
// serialised on the engine's thread pool (one Eval at a time per Engine).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/chat.h"
#include "ellm/engine/engine_gate.h"
#include "ellm/engine/kv_types.h"
#include "ellm/engine/numa.h"
#include "ellm/engine/numa_memory.h"
#include "ellm/engine/tokenizer.h"

namespace ellm {

namespace model {
class Model;
}
namespace kv {
class SliceMemory;
}
class ThreadPool;
class Session;

struct EngineOptions {
  int threads = 0;  // 0 = one per hardware thread
  // NUMA placement (numa.h): off (no pinning, no binding), distribute
  // (threads spread over the nodes, each KV head's slices on the node whose
  // threads read them, repacked weights interleaved), isolate (everything on
  // numa_node), replicate (as distribute, with a copy of the repacked
  // weights on every node, each thread reading its own node's).
  NumaMode numa = NumaMode::kOff;
  int numa_node = -1;  // for isolate; -1 = the first node
  // Lock the weights and the KV cache in RAM (mlock); the error names
  // RLIMIT_MEMLOCK when the limit is too low.
  bool mlock = false;
  // The chat template: a built-in name (gemma, llama3, chatml) or a path
  // ending in .jinja; empty = the file's own tokenizer.chat_template, else a
  // built-in recognised from the file (ChatTemplate::FromGguf). An unknown
  // name or a template that does not parse fails Load.
  std::string chat_template;
  // Tests replace the machine's topology and node memory; null = the real ones.
  const Topology* topology = nullptr;
  NodeMemory* node_memory = nullptr;
};

// Called during Eval after each micro-batch: positions done and to do in
// this call. Return false to cancel: Eval then stops at the next micro-batch
// boundary with CANCELLED (the positions already evaluated stay valid).
using ProgressCallback = std::function<bool(int64_t done, int64_t total)>;

// Opt-in approximate attention for full-attention layers (off by default;
// sliding-window layers are always exact). Each tile of query rows attends
// to the first `sink_tokens` keys, the `local_tokens` keys before its first
// row (and its own), and the `top_k_blocks` blocks of 64 keys in between
// whose summaries bound its scores highest: per block and dimension the
// keys' max and min, so sum_d max(q_d max_d, q_d min_d) >= q.k for every
// key of the block (Quest, Tang et al. 2024). The summaries cost 2 floats
// per 64 keys and dimension (3% of a bf16 cache at head size 256). With
// fewer blocks between sink and window than top_k_blocks, attention is
// exact; otherwise results depend on how tokens were batched.
struct SparseAttentionOptions {
  int top_k_blocks = 0;  // 0 = off
  int sink_tokens = 64;
  int local_tokens = 1024;
};

struct SessionOptions {
  int64_t n_ctx = 4096;       // positions this session may reach
  int64_t micro_batch = 256;  // tokens per forward step during prefill
  KvType kv_type = KvType::kBF16;
  // Opt-in, bf16 KV only: attention's weights (the softmax probabilities)
  // rounded to bf16 for the product with V, done by bf16 pair dot products
  // (twice the f32 rate where the CPU has AVX512_BF16); the default keeps
  // them f32. Changes results slightly (docs/benchmarks.md: perplexity).
  bool bf16_attention_weights = false;
  AttnScores attn_scores = AttnScores::kAuto;  // bf16 KV only (see AttnScores)
  // Resident KV bytes allowed (0 = no limit). Blocks of full-attention
  // layers beyond it are spilled to spill_dir and read back when attention
  // needs them; results are bit-identical either way.
  uint64_t kv_memory_budget = 0;
  std::string spill_dir;  // required with a budget
  // 0: spilled blocks are stored raw (with a checksum) and read back at
  // memory speed, so decode under a budget costs little; 1..19: byte planes
  // + zstd at that level, about 30% less disk for bf16 and about twice the
  // decode time under a budget (docs/benchmarks.md).
  int spill_zstd_level = 0;
  // Opt-in, raw spill only (level 0): attention reads spilled blocks in
  // place from the spill file's mapped pages instead of copying them back
  // (decode under a budget then costs about what it does in memory). The
  // mapped pages count in the process's RSS, and an I/O error on the spill
  // disk ends the process with SIGBUS (engine/kv/kv_cache.h: Mapped spill).
  bool kv_spill_map = false;
  SparseAttentionOptions sparse_attention;  // off by default

  // InvalidArgument naming the first setting that cannot work, whatever the
  // model: n_ctx or micro_batch below 1, a budget without spill_dir, a zstd
  // level outside 1..19, negative sparse-attention sizes, bf16 attention
  // weights without the bf16 KV cache. Engine::NewSession calls it (and
  // checks n_ctx against the model); config files and CLI flags call it too.
  Status Validate() const;
};

struct ModelInfo {
  std::string path;
  // Identifies the model file's contents (size, header, metadata, tensor
  // table and sampled weights), for saved states: 16 hex digits.
  std::string fingerprint;
  std::string architecture;
  std::string name;
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_layer = 0;
  int n_embd = 0;
};

// How the products with one weight matrix run: "packed" through the
// repacked integer GEMM (kernels/gemm_packed.h), or "row-wise" through the
// per-row dot kernels (a type without a packed layout, or packing turned
// off by ELLM_PACKED_WEIGHTS=off), which are several times slower.
struct WeightPath {
  std::string tensor;  // the GGUF tensor name
  std::string type;    // its GGUF type name, as quant::TypeName ("q4_K")
  bool packed = false;
};

class Engine {
 public:
  static StatusOr<std::unique_ptr<Engine>> Load(const std::string& path,
                                                const EngineOptions& options = {});
  // Whether the file at `path` would run, without loading its weights: the
  // architecture, its hyperparameter keys, every tensor's name, shape and
  // type, the tokenizer (model, pre-tokenizer, special tokens) and the
  // file's own chat template when it has one. The error names the key or
  // tensor and the reason.
  static Status CheckRuns(const std::string& path);
  ~Engine();

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelInfo& info() const { return info_; }
  // The chat template named in the options or the file's own, or why there
  // is none (the file's template did not parse, or none can be recognised).
  const StatusOr<ChatTemplate>& chat_template() const { return chat_template_; }
  int threads() const;
  // Every weight matrix the forward pass multiplies by (each layer's
  // projections, then the output matrix), once per tensor, and its path.
  std::vector<WeightPath> WeightPaths() const;
  // The NUMA layout in use (mode off: nothing pinned or bound).
  const NumaPlan& numa_plan() const { return *numa_plan_; }

  // REQUIRES: options.n_ctx >= 1, micro_batch >= 1. n_ctx above the model's
  // training context is an error.
  StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options);

  // Whose turn it is to evaluate, when several callers share this engine
  // (engine_gate.h). Callers that never share it need not use it.
  EngineGate& gate() const { return gate_; }

 private:
  friend class Session;
  Engine();
  Status SetUpNuma(const EngineOptions& options);
  Status PlaceWeights(const EngineOptions& options);
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<NumaPlan> numa_plan_;
  std::unique_ptr<kv::SliceMemory> kv_memory_;  // null = the heap
  NodeMemory* replica_memory_ = nullptr;
  std::vector<std::pair<void*, size_t>> replica_buffers_;  // numa replicate
  ModelInfo info_;
  StatusOr<ChatTemplate> chat_template_ = UnimplementedError("no model loaded");
  mutable EngineGate gate_;
};

enum class LogitsFor { kNone, kLast, kAll };

// Called with the index of the token within the Eval call and its logits
// (n_vocab floats, valid only during the call).
using LogitsCallback = std::function<void(int64_t index, std::span<const float> logits)>;

class Session {
 public:
  ~Session();
  // Appends `tokens` at position() and runs them through the model in
  // micro-batches. Fails with OUT_OF_RANGE (and changes nothing) when the
  // tokens would pass n_ctx, INVALID_ARGUMENT for an id outside the vocabulary.
  Status Eval(std::span<const TokenId> tokens, LogitsFor which, const LogitsCallback& on_logits,
              const ProgressCallback& on_progress = nullptr);
  // Batched decode: one token for each of `sessions` in one pass over the
  // weights (each weight matrix is read once for all of them; attention and
  // the KV cache stay per session). on_logits gets (index into `sessions`,
  // that session's logits). The sessions must be distinct, of one engine,
  // and not evaluating elsewhere; each advances by one position. Fails
  // before changing anything with OUT_OF_RANGE when a session is full, or
  // INVALID_ARGUMENT. The first session's scratch buffers hold the rows;
  // more sessions than its micro_batch go in several passes.
  static Status EvalBatch(std::span<Session* const> sessions, std::span<const TokenId> tokens,
                          const LogitsCallback& on_logits);
  int64_t position() const { return pos_; }
  int64_t n_ctx() const;
  // Bytes of KV cache this session holds in memory (allocated for n_ctx;
  // sliding-window layers hold only their window).
  uint64_t kv_bytes() const;
  // Forgets every position (the cache is reused, spilled blocks dropped).
  void Reset();
  // Keeps the first n positions and forgets the rest, so that a prompt
  // sharing only a prefix with this session's tokens (a new conversation
  // with the same system prompt) continues from there. Possible while the
  // sliding-window layers still hold the window before n (CanTruncate: a
  // session that has not run far past n); otherwise FAILED_PRECONDITION and
  // nothing changes. Logits after Truncate(n) and Eval of the rest equal
  // those of evaluating all of it. REQUIRES: 0 <= n <= position().
  bool CanTruncate(int64_t n) const;
  Status Truncate(int64_t n);

  // Prefix reuse. SaveState writes the KV cache of every position so far
  // (and the tokens that made it) to `path`. RestoreState replaces this
  // session's positions with a saved state when the file was made by the
  // same model and KV settings and its tokens are exactly the first tokens
  // of `tokens`; returns how many positions it restored (evaluate the rest
  // of `tokens` from there; logits need at least one more token).
  // Errors: NOT_FOUND, FAILED_PRECONDITION naming the mismatch, DATA_LOSS;
  // after an error the session is empty.
  Status SaveState(const std::string& path);
  StatusOr<int64_t> RestoreState(const std::string& path, std::span<const TokenId> tokens);
  // The tokens evaluated so far (position() of them).
  std::span<const TokenId> tokens() const { return tokens_; }
  KvStats kv_stats() const;

  // The KV cache and scratch buffers: defined inside the engine
  // (model/session_state.h), opaque to everyone else.
  struct State;

 private:
  friend class Engine;
  Session(Engine* engine, std::unique_ptr<State> state);
  Engine* engine_;
  std::unique_ptr<State> state_;
  int64_t pos_ = 0;
  std::vector<TokenId> tokens_;
};

}  // namespace ellm

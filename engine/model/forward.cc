// The forward pass, one micro-batch at a time, for every family: it reads
// top to bottom and branches only on the spec's recipe enums.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "ellm/engine/engine.h"
#include "ellm/engine/thread_pool.h"
#include "kv/kv_cache.h"
#include "kv/kv_state_file.h"
#include "kv/node_slice_memory.h"
#include "model/attention.h"
#include "model/model.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "quant/quant.h"

namespace ellm {

using model::HParams;
using model::Layer;

// Scratch buffers sized for one micro-batch, reused across calls.
struct Session::State {
  State(const model::Model& m, const SessionOptions& o, std::unique_ptr<kv::KvCache> kv)
      : cache(std::move(kv)),
        bf16_weights(o.bf16_attention_weights),
        pair_scores(ResolveAttnScores(o.attn_scores) == AttnScores::kPairs),
        sparse(o.sparse_attention) {
    const HParams& hp = m.hparams();
    const int64_t mb = o.micro_batch;
    micro_batch = mb;
    x.resize(mb * hp.n_embd);
    h.resize(mb * hp.n_embd);
    q.resize(mb * hp.n_head * hp.head_dim_k);
    k.resize(mb * hp.n_head_kv * hp.head_dim_k);
    v.resize(mb * hp.n_head_kv * hp.head_dim_v);
    attn.resize(mb * hp.n_head * hp.head_dim_v);
    gate.resize(mb * hp.n_ff);
    up.resize(mb * hp.n_ff);
    if (sparse.top_k_blocks > 0) summaries.resize(m.layers().size());
  }
  std::unique_ptr<kv::KvCache> cache;
  bool bf16_weights = false;  // SessionOptions::bf16_attention_weights
  bool pair_scores = true;    // SessionOptions::attn_scores, resolved
  SparseAttentionOptions sparse;
  std::vector<model::SparseSummaries> summaries;  // per layer, with sparse attention
  // The cache's contents were replaced: every block's bounds are recomputed.
  void ForgetSummaries() {
    for (model::SparseSummaries& s : summaries) s.blocks = 0;
  }
  int64_t micro_batch;
  std::vector<float> x, h, q, k, v, attn, gate, up, logits;
  std::vector<uint8_t> emb_row;  // one stored embedding row, unpacked
  ops::MatMulScratch mm;
  model::AttentionScratch attn_scratch;
  std::vector<model::AttentionPlacement> attn_placement;  // per layer
};

namespace {

// Logit rows computed per pass over the output matrix: bounds the buffer
// (rows x n_vocab floats) while reading the big matrix once per slice.
constexpr int64_t kLogitRowsPerSlice = 32;

// FNV-1a (64-bit) over the file size, its first MiB (header, metadata,
// tensor table) and 16 spread 4 KiB samples of the weights: cheap, and
// any re-quantization or different file changes it.
std::string ModelFingerprint(std::span<const uint8_t> bytes) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  const uint64_t size = bytes.size();
  mix(reinterpret_cast<const uint8_t*>(&size), sizeof(size));
  mix(bytes.data(), std::min<size_t>(bytes.size(), 1 << 20));
  constexpr size_t kSample = 4096;
  if (bytes.size() > kSample) {
    for (int i = 0; i < 16; ++i) {
      mix(bytes.data() + (bytes.size() - kSample) / 15 * i, kSample);
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void NormRows(const float* x, const std::vector<float>& w, float* y, int64_t rows, int64_t n,
              float eps) {
  for (int64_t r = 0; r < rows; ++r) ops::RmsNorm(x + r * n, w.data(), y + r * n, n, eps);
}

// The same, rows shared among the pool's threads (a micro-batch's rows; the
// per-row arithmetic is unchanged, so results are too).
void NormRows(ThreadPool& pool, const float* x, const std::vector<float>& w, float* y, int64_t rows,
              int64_t n, float eps) {
  pool.ParallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    NormRows(x + r0 * n, w, y + r0 * n, r1 - r0, n, eps);
  });
}

}  // namespace

Status Session::Eval(std::span<const TokenId> tokens, LogitsFor which,
                     const LogitsCallback& on_logits, const ProgressCallback& on_progress) {
  const model::Model& m = *engine_->model_;
  const HParams& hp = m.hparams();
  if (pos_ + static_cast<int64_t>(tokens.size()) > state_->cache->n_ctx()) {
    return OutOfRangeError("context full: " + std::to_string(pos_) + " positions used, " +
                           std::to_string(tokens.size()) + " more requested, n_ctx is " +
                           std::to_string(state_->cache->n_ctx()));
  }
  for (TokenId id : tokens) {
    if (id < 0 || id >= hp.n_vocab) {
      return InvalidArgumentError("token id " + std::to_string(id) + " outside the vocabulary (" +
                                  std::to_string(hp.n_vocab) + ")");
    }
  }
  ThreadPool& pool = *engine_->pool_;
  State& s = *state_;
  const int64_t E = hp.n_embd;
  const int64_t total = static_cast<int64_t>(tokens.size());
  for (int64_t b0 = 0; b0 < total; b0 += s.micro_batch) {
    const int64_t n = std::min(s.micro_batch, total - b0);
    const int64_t pos0 = pos_;
    // Embeddings.
    for (int64_t t = 0; t < n; ++t) {
      ops::DequantizeWeightRow(m.token_embd(), tokens[b0 + t], s.x.data() + t * E, s.emb_row);
      ops::Scale(s.x.data() + t * E, hp.embedding_scale, E);
    }
    for (int il = 0; il < hp.n_layer; ++il) {
      const Layer& l = m.layers()[il];
      // Attention block.
      NormRows(pool, s.x.data(), l.attn_norm, s.h.data(), n, E, hp.rms_eps);
      ops::MatMul(l.q, s.h.data(), n, s.q.data(), pool, s.mm);
      ops::MatMul(l.k, s.h.data(), n, s.k.data(), pool, s.mm);
      ops::MatMul(l.v, s.h.data(), n, s.v.data(), pool, s.mm);
      const int64_t q_row = int64_t{hp.n_head} * hp.head_dim_k;
      const int64_t k_row = int64_t{hp.n_head_kv} * hp.head_dim_k;
      const int64_t v_row = int64_t{hp.n_head_kv} * hp.head_dim_v;
      if (!l.q_bias.empty()) ops::AddRowBias(s.q.data(), l.q_bias.data(), n, q_row);
      if (!l.k_bias.empty()) ops::AddRowBias(s.k.data(), l.k_bias.data(), n, k_row);
      if (!l.v_bias.empty()) ops::AddRowBias(s.v.data(), l.v_bias.data(), n, v_row);
      const ops::RopePairs pairs = m.spec().rope == model::RopeStyle::kNeox
                                       ? ops::RopePairs::kNeox
                                       : ops::RopePairs::kAdjacent;
      const ops::RopeParams rope = m.RopeFor(l, s.cache->n_ctx());
      // Heads of head_dim_k whose first n_rot dimensions turn (all, but for
      // partial RoPE).
      auto rope_heads = [&](float* x, int heads, int64_t pos) {
        if (hp.n_rot == hp.head_dim_k) {
          ops::Rope(x, heads, hp.head_dim_k, pos, pairs, rope);
          return;
        }
        for (int h = 0; h < heads; ++h) {
          ops::Rope(x + int64_t{h} * hp.head_dim_k, 1, hp.n_rot, pos, pairs, rope);
        }
      };
      pool.ParallelFor(n, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          float* qt = s.q.data() + t * q_row;
          float* kt = s.k.data() + t * k_row;
          if (m.spec().qk_norm) {
            NormRows(qt, l.q_norm, qt, hp.n_head, hp.head_dim_k, hp.rms_eps);
            NormRows(kt, l.k_norm, kt, hp.n_head_kv, hp.head_dim_k, hp.rms_eps);
          }
          rope_heads(qt, hp.n_head, pos0 + t);
          rope_heads(kt, hp.n_head_kv, pos0 + t);
          ops::Scale(qt, hp.query_scale, q_row);
        }
      });
      // The cache takes rows one at a time, on this thread (it may spill).
      for (int64_t t = 0; t < n; ++t) {
        ELLM_RETURN_IF_ERROR(
            s.cache->Store(il, pos0 + t, s.k.data() + t * k_row, s.v.data() + t * v_row));
      }
      model::AttentionShape shape{hp.n_head,
                                  hp.n_head_kv,
                                  hp.head_dim_k,
                                  hp.head_dim_v,
                                  l.sliding ? hp.sliding_window : 0,
                                  s.bf16_weights,
                                  s.sparse,
                                  s.pair_scores};
      ELLM_RETURN_IF_ERROR(model::Attention(shape, *s.cache, il, s.q.data(), n, pos0, s.attn.data(),
                                            pool, s.attn_scratch, s.attn_placement[il],
                                            s.summaries.empty() ? nullptr : &s.summaries[il]));
      ops::MatMul(l.o, s.attn.data(), n, s.h.data(), pool, s.mm);
      if (m.spec().norms == model::NormPlacement::kPreAndPost) {
        NormRows(pool, s.h.data(), l.post_attn_norm, s.h.data(), n, E, hp.rms_eps);
      }
      if (hp.residual_scale != 1.0f) ops::Scale(s.h.data(), hp.residual_scale, n * E);
      ops::AddInPlace(s.x.data(), s.h.data(), n * E);
      // Feed-forward block.
      NormRows(pool, s.x.data(), l.ffn_norm, s.h.data(), n, E, hp.rms_eps);
      ops::MatMul(l.gate, s.h.data(), n, s.gate.data(), pool, s.mm);
      ops::MatMul(l.up, s.h.data(), n, s.up.data(), pool, s.mm);
      pool.ParallelFor(n, 1, [&](int64_t t0, int64_t t1) {
        float* g = s.gate.data() + t0 * hp.n_ff;
        const float* u = s.up.data() + t0 * hp.n_ff;
        switch (m.spec().activation) {
          case model::FfnActivation::kGeluTanh:
            ops::GeGlu(g, u, g, (t1 - t0) * hp.n_ff);
            break;
          case model::FfnActivation::kSilu:
            ops::SwiGlu(g, u, g, (t1 - t0) * hp.n_ff);
            break;
        }
      });
      ops::MatMul(l.down, s.gate.data(), n, s.h.data(), pool, s.mm);
      if (m.spec().norms == model::NormPlacement::kPreAndPost) {
        NormRows(pool, s.h.data(), l.post_ffn_norm, s.h.data(), n, E, hp.rms_eps);
      }
      if (hp.residual_scale != 1.0f) ops::Scale(s.h.data(), hp.residual_scale, n * E);
      ops::AddInPlace(s.x.data(), s.h.data(), n * E);
    }
    pos_ += n;
    tokens_.insert(tokens_.end(), tokens.begin() + b0, tokens.begin() + b0 + n);
    // Logits, only where asked for.
    int64_t first = n, last = n;  // [first, last) of this micro-batch
    if (which == LogitsFor::kAll) {
      first = 0;
    } else if (which == LogitsFor::kLast && b0 + n == total) {
      first = n - 1;
    }
    for (int64_t t0 = first; t0 < last; t0 += kLogitRowsPerSlice) {
      const int64_t rows = std::min(kLogitRowsPerSlice, last - t0);
      NormRows(s.x.data() + t0 * E, m.output_norm(), s.h.data(), rows, E, hp.rms_eps);
      s.logits.resize(static_cast<size_t>(rows * hp.n_vocab));
      ops::MatMul(m.output(), s.h.data(), rows, s.logits.data(), pool, s.mm);
      if (hp.logit_scale != 1.0f) {
        // As ggml_scale by 1/logit_scale (src/models/granite.cpp), not a division.
        ops::Scale(s.logits.data(), 1.0f / hp.logit_scale, rows * hp.n_vocab);
      }
      if (hp.final_logit_softcap > 0) {
        const float cap = hp.final_logit_softcap;
        for (float& z : s.logits) z = std::tanh(z / cap) * cap;
      }
      for (int64_t r = 0; r < rows; ++r) {
        on_logits(b0 + t0 + r, std::span<const float>(s.logits.data() + r * hp.n_vocab,
                                                      static_cast<size_t>(hp.n_vocab)));
      }
    }
    if (on_progress && !on_progress(b0 + n, total) && b0 + n < total) {
      return CancelledError("evaluation cancelled after " + std::to_string(b0 + n) + " of " +
                            std::to_string(total) + " tokens");
    }
  }
  return OkStatus();
}

uint64_t Session::kv_bytes() const { return state_->cache->stats().resident_bytes; }
KvStats Session::kv_stats() const { return state_->cache->stats(); }

void Session::Reset() {
  pos_ = 0;
  tokens_.clear();
  // Clearing fails only when truncating the spill file does; the blocks in
  // it are unreachable either way, so the session stays usable.
  (void)state_->cache->Clear();
  state_->ForgetSummaries();
}

Status Session::SaveState(const std::string& path) {
  return kv::SaveKvState(*state_->cache, tokens_, engine_->info_.fingerprint, path);
}

StatusOr<int64_t> Session::RestoreState(const std::string& path, std::span<const TokenId> tokens) {
  pos_ = 0;
  tokens_.clear();
  state_->ForgetSummaries();
  ELLM_ASSIGN_OR_RETURN(int64_t n,
                        kv::LoadKvState(*state_->cache, tokens, engine_->info_.fingerprint, path));
  pos_ = n;
  tokens_.assign(tokens.begin(), tokens.begin() + n);
  return n;
}

int64_t Session::n_ctx() const { return state_->cache->n_ctx(); }
Session::Session(Engine* engine, std::unique_ptr<State> state)
    : engine_(engine), state_(std::move(state)) {}
Session::~Session() = default;

Engine::Engine() = default;
Engine::~Engine() {
  pool_.reset();
  model_.reset();  // the packed weights point into the replicas
  for (const auto& [p, bytes] : replica_buffers_) replica_memory_->Free(p, bytes);
}
int Engine::threads() const { return pool_->size(); }

std::vector<WeightPath> Engine::WeightPaths() const {
  std::vector<WeightPath> out;
  // A fused matrix (Phi 3's attn_qkv) is bound as row ranges of one tensor.
  std::vector<std::string_view> seen;
  auto add = [&](const ops::Weight& w) {
    if (w.info == nullptr || std::find(seen.begin(), seen.end(), w.info->name) != seen.end()) {
      return;
    }
    seen.push_back(w.info->name);
    out.push_back(
        {std::string(w.info->name), std::string(quant::TypeName(w.type)), w.packed != nullptr});
  };
  for (const model::Layer& l : model_->layers()) {
    for (const ops::Weight* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) add(*w);
  }
  add(model_->output());
  return out;
}

Status Engine::CheckRuns(const std::string& path) {
  ELLM_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  ELLM_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::FromGguf(file));
  if (file.GetString("tokenizer.chat_template").ok()) {
    ELLM_RETURN_IF_ERROR(ChatTemplate::FromGguf(file, *tokenizer, "").status());
  }
  const int32_t vocab = tokenizer->vocab_size();
  ELLM_ASSIGN_OR_RETURN(auto model, model::Model::Load(std::move(file), /*pack_weights=*/false));
  if (vocab > model->hparams().n_vocab) {
    return InvalidArgumentError("model '" + path + "': the tokenizer has " + std::to_string(vocab) +
                                " tokens but token_embd.weight only " +
                                std::to_string(model->hparams().n_vocab) + " rows");
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Engine>> Engine::Load(const std::string& path,
                                               const EngineOptions& options) {
  ELLM_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  std::unique_ptr<Engine> e(new Engine());
  ELLM_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::FromGguf(file));
  // A template named in the options must work; the file's own may fail (its
  // error is kept for whoever asks for chat: perplexity or raw generation do
  // not need it).
  e->chat_template_ = ChatTemplate::FromGguf(file, *e->tokenizer_, options.chat_template);
  if (!options.chat_template.empty() && !e->chat_template_.ok()) {
    return e->chat_template_.status().WithContext("chat_template");
  }
  ELLM_ASSIGN_OR_RETURN(e->model_, model::Model::Load(std::move(file)));
  const HParams& hp = e->model_->hparams();
  if (e->tokenizer_->vocab_size() > hp.n_vocab) {
    return InvalidArgumentError(
        "model '" + path + "': the tokenizer has " + std::to_string(e->tokenizer_->vocab_size()) +
        " tokens but token_embd.weight only " + std::to_string(hp.n_vocab) + " rows");
  }
  ELLM_RETURN_IF_ERROR(e->SetUpNuma(options));
  e->info_.path = path;
  e->info_.fingerprint = ModelFingerprint(e->model_->file().bytes());
  e->info_.architecture = std::string(e->model_->spec().name);
  auto name = e->model_->file().GetString("general.name");
  e->info_.name = name.ok() ? std::string(*name) : e->info_.architecture;
  e->info_.n_vocab = hp.n_vocab;
  e->info_.n_ctx_train = hp.n_ctx_train;
  e->info_.n_layer = hp.n_layer;
  e->info_.n_embd = hp.n_embd;
  return e;
}

Status Engine::SetUpNuma(const EngineOptions& options) {
  const HParams& hp = model_->hparams();
  std::optional<StaticTopology> system;
  if (options.topology == nullptr) system.emplace(SystemTopology());
  const Topology& topology = options.topology != nullptr ? *options.topology : *system;
  std::vector<int64_t> positions;  // only which layers are alike matters
  for (const Layer& l : model_->layers()) positions.push_back(l.sliding ? hp.sliding_window : 0);
  ELLM_ASSIGN_OR_RETURN(NumaPlan plan, PlanNuma(topology, options.numa, options.threads, hp.n_layer,
                                                hp.n_head_kv, options.numa_node, positions));
  ThreadPool::Options po;
  po.threads = options.numa == NumaMode::kOff ? options.threads : plan.threads;
  po.cpus = plan.cpus;
  pool_ = std::make_unique<ThreadPool>(po);
  if (!plan.cpus.empty()) {
    // The caller's thread is worker 0 of every parallel loop: pin it too.
    ELLM_RETURN_IF_ERROR(PinCallingThread(plan.cpus[0]));
  }
  numa_plan_ = std::make_unique<NumaPlan>(std::move(plan));
  if (options.numa != NumaMode::kOff || options.mlock || options.node_memory != nullptr) {
    NodeMemory& memory = options.node_memory != nullptr ? *options.node_memory : SystemNodeMemory();
    kv_memory_ = std::make_unique<kv::NodeSliceMemory>(memory, options.mlock);
  }
  ELLM_RETURN_IF_ERROR(PlaceWeights(options));
  if (options.mlock) {
    std::span<const uint8_t> file = model_->file().bytes();
    ELLM_RETURN_IF_ERROR(LockMemory(file.data(), file.size(), "model weights (file mapping)"));
    for (const auto& p : model_->packed()) {
      ELLM_RETURN_IF_ERROR(LockMemory(p->buffer(), p->bytes(), "model weights (repacked)"));
    }
    for (const auto& [p, bytes] : replica_buffers_) {
      ELLM_RETURN_IF_ERROR(LockMemory(p, bytes, "model weights (NUMA replica)"));
    }
  }
  return OkStatus();
}

// The repacked layer matrices (the bulk of the weights) go where the plan
// says: interleaved over the nodes (distribute), onto the one node
// (isolate), or copied onto every node with each thread reading its own
// node's copy (replicate). That includes the output projection when it is
// packed (Model::PackWeights); a matrix left in the file mapping stays
// where the page cache put it, as its pages cannot be bound.
Status Engine::PlaceWeights(const EngineOptions& options) {
  const NumaPlan& plan = *numa_plan_;
  if (plan.weight_nodes.empty()) return OkStatus();
  if (plan.weights == WeightPlacement::kReplicate) {
    if (plan.weight_nodes.size() < 2) return OkStatus();  // one node: the primary copy serves
    replica_memory_ = options.node_memory != nullptr ? options.node_memory : &SystemNodeMemory();
    for (const auto& p : model_->packed()) {
      for (int node : plan.weight_nodes) {
        ELLM_ASSIGN_OR_RETURN(void* buf, replica_memory_->Allocate(p->bytes(), node));
        replica_buffers_.emplace_back(buf, p->bytes());
        p->AddReplica(static_cast<uint8_t*>(buf));
      }
    }
    // Each pool thread (the caller is thread 0) reads its node's replica.
    pool_->Run([&](int thread, int) {
      const int node = plan.ThreadNode(thread);
      const auto it = std::find(plan.weight_nodes.begin(), plan.weight_nodes.end(), node);
      ops::SetThreadReplica(static_cast<int>(it - plan.weight_nodes.begin()));
    });
    return OkStatus();
  }
  if (options.node_memory != nullptr) return OkStatus();  // tests: no real binding
  for (const auto& p : model_->packed()) {
    ELLM_RETURN_IF_ERROR(
        MoveRangeToNodes(const_cast<uint8_t*>(p->buffer()), p->bytes(), plan.weight_nodes));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Session>> Engine::NewSession(const SessionOptions& options) {
  if (options.n_ctx < 1 || options.micro_batch < 1) {
    return InvalidArgumentError("session needs n_ctx >= 1 and micro_batch >= 1");
  }
  if (options.n_ctx > info_.n_ctx_train) {
    return InvalidArgumentError("context " + std::to_string(options.n_ctx) +
                                " exceeds the model's training context " +
                                std::to_string(info_.n_ctx_train));
  }
  const SparseAttentionOptions& sp = options.sparse_attention;
  if (sp.top_k_blocks < 0 || sp.sink_tokens < 0 || sp.local_tokens < 0) {
    return InvalidArgumentError(
        "sparse attention needs top_k_blocks, sink_tokens and local_tokens >= 0");
  }
  if (options.bf16_attention_weights && options.kv_type != KvType::kBF16) {
    return InvalidArgumentError(
        "bf16 attention weights need the bf16 KV cache (kv_type bf16), not " +
        std::string(KvTypeName(options.kv_type)));
  }
  SessionOptions o = options;
  o.micro_batch = std::min(o.micro_batch, o.n_ctx);
  const HParams& hp = model_->hparams();
  kv::KvCacheOptions ko;
  ko.n_head_kv = hp.n_head_kv;
  ko.head_dim_k = hp.head_dim_k;
  ko.head_dim_v = hp.head_dim_v;
  for (const Layer& l : model_->layers()) ko.windows.push_back(l.sliding ? hp.sliding_window : 0);
  ko.n_ctx = o.n_ctx;
  ko.micro_batch = o.micro_batch;
  ko.type = o.kv_type;
  ko.memory_budget = o.kv_memory_budget;
  ko.spill_dir = o.spill_dir;
  ko.zstd_level = o.spill_zstd_level;
  if (numa_plan_->mode != NumaMode::kOff) {
    const NumaPlan* plan = numa_plan_.get();
    ko.node_of = [plan](int layer, int kv_head) { return plan->KvNode(layer, kv_head); };
  }
  ko.memory = kv_memory_.get();
  ELLM_ASSIGN_OR_RETURN(std::unique_ptr<kv::KvCache> cache, kv::KvCache::Create(ko));
  auto state = std::make_unique<Session::State>(*model_, o, std::move(cache));
  // Attention for KV head h runs on the threads of the node holding h's slices.
  for (int il = 0; il < hp.n_layer; ++il) {
    state->attn_placement.push_back(model::PlacementForLayer(*numa_plan_, il));
  }
  return std::unique_ptr<Session>(new Session(this, std::move(state)));
}

}  // namespace ellm

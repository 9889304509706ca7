// The engine's facade (ellm/engine/engine.h): loading a model, placing its
// weights and threads (NUMA), opening sessions, and a session's state
// around the forward pass (reset, save, restore). The forward pass itself
// is model/forward.cc.
#include "ellm/engine/engine.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "ellm/engine/cpu_features.h"
#include "ellm/engine/thread_pool.h"
#include "kv/kv_cache.h"
#include "kv/kv_state_file.h"
#include "kv/node_slice_memory.h"
#include "model/attention.h"
#include "model/model.h"
#include "model/session_state.h"
#include "ops/matmul.h"
#include "quant/quant.h"

namespace ellm {

using model::HParams;
using model::Layer;

namespace {

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

}  // namespace

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

bool Session::CanTruncate(int64_t n) const {
  return n >= 0 && n <= pos_ && state_->cache->CanTruncate(n);
}

Status Session::Truncate(int64_t n) {
  if (n < 0 || n > pos_) {
    return InvalidArgumentError("cannot keep " + std::to_string(n) + " of " + std::to_string(pos_) +
                                " positions");
  }
  if (n == pos_) return OkStatus();
  ELLM_RETURN_IF_ERROR(state_->cache->Truncate(n));
  pos_ = n;
  tokens_.resize(static_cast<size_t>(n));
  // Sparse attention's block bounds past n are recomputed (UpdateSummaries
  // keeps only the complete blocks before the next position).
  return OkStatus();
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

Status SessionOptions::Validate() const {
  if (n_ctx < 1 || micro_batch < 1) {
    return InvalidArgumentError("session needs n_ctx >= 1 and micro_batch >= 1");
  }
  if (kv_memory_budget > 0 && spill_dir.empty()) {
    return InvalidArgumentError("a KV memory budget needs a spill directory (spill_dir)");
  }
  if (spill_zstd_level < 0 || spill_zstd_level > 19) {
    return InvalidArgumentError("spill zstd level must be 0 (raw) or 1..19, not " +
                                std::to_string(spill_zstd_level));
  }
  if (kv_spill_map && spill_zstd_level != 0) {
    return InvalidArgumentError(
        "mapped spill reads (spill read 'map') need raw spill blocks (spill level 0), not level " +
        std::to_string(spill_zstd_level));
  }
  const SparseAttentionOptions& sp = sparse_attention;
  if (sp.top_k_blocks < 0 || sp.sink_tokens < 0 || sp.local_tokens < 0) {
    return InvalidArgumentError(
        "sparse attention needs top_k_blocks, sink_tokens and local_tokens >= 0");
  }
  if (bf16_attention_weights && kv_type != KvType::kBF16) {
    return InvalidArgumentError(
        "bf16 attention weights need the bf16 KV cache (kv_type bf16), not " +
        std::string(KvTypeName(kv_type)));
  }
  if (attn_scores == AttnScores::kTiles) {
    if (kv_type != KvType::kBF16) {
      return InvalidArgumentError(
          "attention scores 'tiles' need the bf16 KV cache (kv_type bf16), not " +
          std::string(KvTypeName(kv_type)));
    }
    const CpuFeatures& cpu = HostCpu();
    if (cpu.Level() < IsaLevel::kAmx || !cpu.amx_bf16) {
      return InvalidArgumentError(
          "attention scores 'tiles' need AMX-BF16 tiles (Intel Xeon from Sapphire Rapids on, "
          "with Linux's permission); this CPU: " +
          cpu.ToString() + "; use auto, pairs or f32");
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Session>> Engine::NewSession(const SessionOptions& options) {
  ELLM_RETURN_IF_ERROR(options.Validate());
  if (options.n_ctx > info_.n_ctx_train) {
    return InvalidArgumentError("context " + std::to_string(options.n_ctx) +
                                " exceeds the model's training context " +
                                std::to_string(info_.n_ctx_train));
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
  ko.map_spill = o.kv_spill_map;
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

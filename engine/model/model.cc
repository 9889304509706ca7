#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "quant/quant.h"

namespace ellm::model {
namespace {

std::string Key(const ArchSpec& spec, const char* suffix) {
  return std::string(spec.name) + "." + suffix;
}

std::string ShapeOf(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// The spec's name pattern with "%d" replaced by the layer index.
std::string TensorName(std::string_view pattern, int il) {
  std::string name(pattern);
  if (size_t at = name.find("%d"); at != std::string::npos) name.replace(at, 2, std::to_string(il));
  return name;
}

// Rows [first, first + count) of `w`, as a matrix of its own (a fused
// tensor's part: its rows are contiguous in the file).
ops::Weight RowRange(const ops::Weight& w, int64_t first, int64_t count) {
  ops::Weight part = w;
  part.rows = count;
  part.data = w.data + first * w.row_bytes;
  return part;
}

int64_t Resolve(Dim d, const HParams& hp) {
  switch (d) {
    case Dim::kEmbd:
      return hp.n_embd;
    case Dim::kFf:
      return hp.n_ff;
    case Dim::kVocab:
      return hp.n_vocab;
    case Dim::kQ:
      return int64_t{hp.n_head} * hp.head_dim_k;
    case Dim::kKv:
      return int64_t{hp.n_head_kv} * hp.head_dim_k;
    case Dim::kVKv:
      return int64_t{hp.n_head_kv} * hp.head_dim_v;
    case Dim::kHeadDimK:
      return hp.head_dim_k;
    case Dim::kAttnOut:
      return int64_t{hp.n_head} * hp.head_dim_v;
    case Dim::kRopeHalf:
      return hp.n_rot / 2;
    case Dim::kQkv:
      return int64_t{hp.n_head} * hp.head_dim_k + int64_t{hp.n_head_kv} * hp.head_dim_k +
             int64_t{hp.n_head_kv} * hp.head_dim_v;
    case Dim::kFfPair:
      return int64_t{2} * hp.n_ff;
  }
  return -1;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> Model::Load(gguf::GgufFile file, bool pack_weights) {
  std::unique_ptr<Model> m(new Model(std::move(file)));
  ELLM_ASSIGN_OR_RETURN(std::string_view arch, m->file_.GetString("general.architecture"));
  m->spec_ = FindArch(arch);
  if (m->spec_ == nullptr) {
    std::string known;
    for (auto n : KnownArchs()) known += (known.empty() ? "" : ", ") + std::string(n);
    return UnimplementedError("model '" + m->file_.path() + "' has architecture '" +
                              std::string(arch) + "'; this build runs: " + known);
  }
  ELLM_RETURN_IF_ERROR(m->ReadHParams());
  ELLM_RETURN_IF_ERROR(m->BindTensors());
  if (pack_weights) m->PackWeights();
  return m;
}

// Every layer matrix whose type has a packed layout gets a packed copy, and
// its file pages are released: MatMul reads only the copy, in prefill and in
// decode alike (the packed kernels are as fast at one token, and reading both
// copies would hold both in memory). The output projection is packed too:
// at one token it is decode's largest product (Gemma 3 270M: 262144 x 640
// Q8_0, 178 MB), and the packed kernel streams it faster than the row-wise
// dot (ellm_bench_gemm, one thread, AVX-512 VNNI: 21.1 vs 30.5 ms). A tied
// matrix's embedding lookups then read the packed copy (kernels::UnpackRow):
// a lookup in the released file pages would fault them back 64 KB at a time.
// ELLM_PACKED_WEIGHTS=off turns packing off, to compare paths on one build
// (benchmarks, bisecting a numerical difference); it is not a tuning knob.
void Model::PackWeights() {
  const char* env = std::getenv("ELLM_PACKED_WEIGHTS");
  if (env != nullptr && std::string_view(env) == "off") return;
  std::vector<ops::Weight*> targets;
  for (Layer& l : layers_) {
    for (ops::Weight* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) targets.push_back(w);
  }
  const bool tied = output_.data == token_embd_.data;
  targets.push_back(&output_);
  std::vector<ops::PackSource> sources;
  std::vector<ops::Weight*> packed_targets;
  for (ops::Weight* w : targets) {
    if (w->data == nullptr || !kernels::CanPack(w->type)) continue;
    sources.push_back({w->type, w->rows, w->cols, w->data, w->row_bytes, true});
    packed_targets.push_back(w);
  }
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  packed_ = ops::PackWeights(sources, threads);
  for (size_t i = 0; i < packed_targets.size(); ++i) packed_targets[i]->packed = packed_[i].get();
  if (tied) token_embd_.packed = output_.packed;
}

Status Model::ReadHParams() {
  const ArchSpec& s = *spec_;
  auto get_int = [&](const char* suffix, int& out, bool required) -> Status {
    auto v = file_.GetUint(Key(s, suffix));
    if (!v.ok()) {
      if (!required && v.status().code() == StatusCode::kNotFound) return OkStatus();
      return v.status();
    }
    if (*v == 0 || *v > (1u << 30)) {
      return InvalidArgumentError("model '" + file_.path() + "': key '" + Key(s, suffix) + "' is " +
                                  std::to_string(*v) + "; expected a positive size");
    }
    out = static_cast<int>(*v);
    return OkStatus();
  };
  auto get_float = [&](const char* suffix, float& out) -> Status {
    auto v = file_.GetFloat(Key(s, suffix));
    if (!v.ok()) return v.status().code() == StatusCode::kNotFound ? OkStatus() : v.status();
    out = static_cast<float>(*v);
    return OkStatus();
  };
  ELLM_RETURN_IF_ERROR(get_int("block_count", hp_.n_layer, true));
  ELLM_RETURN_IF_ERROR(get_int("embedding_length", hp_.n_embd, true));
  ELLM_RETURN_IF_ERROR(get_int("feed_forward_length", hp_.n_ff, true));
  ELLM_RETURN_IF_ERROR(get_int("attention.head_count", hp_.n_head, true));
  hp_.n_head_kv = hp_.n_head;
  ELLM_RETURN_IF_ERROR(get_int("attention.head_count_kv", hp_.n_head_kv, false));
  hp_.head_dim_k = hp_.n_embd / hp_.n_head;
  ELLM_RETURN_IF_ERROR(get_int("attention.key_length", hp_.head_dim_k, false));
  hp_.head_dim_v = hp_.head_dim_k;
  ELLM_RETURN_IF_ERROR(get_int("attention.value_length", hp_.head_dim_v, false));
  ELLM_RETURN_IF_ERROR(get_int("context_length", hp_.n_ctx_train, true));
  ELLM_RETURN_IF_ERROR(get_float("attention.layer_norm_rms_epsilon", hp_.rms_eps));
  ELLM_RETURN_IF_ERROR(get_float("rope.freq_base", hp_.rope_base));
  hp_.rope_base_swa = static_cast<float>(s.default_rope_base_swa);
  ELLM_RETURN_IF_ERROR(get_float("rope.freq_base_swa", hp_.rope_base_swa));
  ELLM_RETURN_IF_ERROR(get_float("final_logit_softcapping", hp_.final_logit_softcap));
  ELLM_RETURN_IF_ERROR(ReadRopeScaling());
  if (hp_.n_head % hp_.n_head_kv != 0) {
    return InvalidArgumentError(
        "model '" + file_.path() + "': head_count " + std::to_string(hp_.n_head) +
        " is not a multiple of head_count_kv " + std::to_string(hp_.n_head_kv));
  }
  if (hp_.head_dim_k % 2 != 0) {
    return InvalidArgumentError("model '" + file_.path() + "': key_length must be even for RoPE");
  }
  // Partial RoPE (Phi-4-mini: 96 of 128) turns the first n_rot dimensions
  // of each head, as ggml_rope_ext with n_dims < the head size.
  hp_.n_rot = hp_.head_dim_k;
  ELLM_RETURN_IF_ERROR(get_int("rope.dimension_count", hp_.n_rot, false));
  if (hp_.n_rot % 2 != 0 || hp_.n_rot > hp_.head_dim_k) {
    return InvalidArgumentError(
        "model '" + file_.path() + "': key '" + Key(s, "rope.dimension_count") + "' is " +
        std::to_string(hp_.n_rot) +
        "; expected an even number <= " + std::to_string(hp_.head_dim_k) + " (the head size)");
  }
  hp_.n_ctx_orig = hp_.n_ctx_train;
  ELLM_RETURN_IF_ERROR(get_int("rope.scaling.original_context_length", hp_.n_ctx_orig, false));
  if (hp_.yarn_ext_factor != 0.0f) {
    ops::RopeYarnCorrDims(hp_.n_rot, hp_.n_ctx_orig, hp_.rope_base, hp_.yarn_beta_fast,
                          hp_.yarn_beta_slow, &hp_.yarn_corr_low, &hp_.yarn_corr_high);
  }
  // The vocabulary size is the embedding matrix's row count (the tokenizer
  // checks its own array against it).
  const gguf::TensorInfo* embd = file_.FindTensor("token_embd.weight");
  if (embd == nullptr || embd->n_dims != 2) {
    return NotFoundError("model '" + file_.path() + "' has no 2-D tensor 'token_embd.weight'");
  }
  hp_.n_vocab = static_cast<int>(embd->ne[1]);
  if (s.embedding_scale == EmbeddingScale::kSqrtEmbd) {
    hp_.embedding_scale = std::sqrt(static_cast<float>(hp_.n_embd));
  }
  hp_.query_scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim_k));
  if (s.query_scale == QueryScale::kGemma3 && hp_.n_layer == 62) {  // see QueryScale
    hp_.query_scale = 1.0f / std::sqrt(static_cast<float>(hp_.n_embd / hp_.n_head));
  }
  if (s.multipliers == Multipliers::kFromFile) ELLM_RETURN_IF_ERROR(ReadMultipliers());
  if (s.window != WindowPattern::kNone) {
    ELLM_RETURN_IF_ERROR(get_int("attention.sliding_window", hp_.sliding_window, false));
  }
  return OkStatus();
}

// rope.scaling.*: the type (none, linear or yarn; others are refused naming
// the key), the factor, and for YaRN llama.cpp's context defaults
// (llama_context's constructor): ext_factor 1, and an attn_factor that
// cancels the 1 + 0.1 ln(factor) ggml_rope_ext multiplies in, so that the
// magnitude is scaled once. rope.scaling.attn_factor multiplies in always.
//
// The rarer YaRN keys override those defaults, with llama.cpp's names and
// meaning (src/llama-arch.cpp LLM_KV_ROPE_SCALING_YARN_*, applied in
// llama_context's constructor, src/llama-context.cpp):
//   rope.scaling.yarn_ext_factor      the extrapolation mix. Absent or
//       negative (llama.cpp's "not set"; its model saver writes -1): 1 for
//       type yarn, else 0. Non-zero turns the ramp on whatever the type.
//   rope.scaling.yarn_attn_factor     the magnitude, used only when
//       ext_factor is 0; with the ramp on llama.cpp replaces it by mscale.
//   rope.scaling.yarn_beta_fast, yarn_beta_slow   the ramp's ends in
//       rotations (ggml_rope_yarn_corr_dims); default 32 and 1.
//   rope.scaling.yarn_log_multiplier  transformers' mscale_all_dim m: the
//       magnitude becomes mscale(s, 1) / mscale(s, m) instead of
//       mscale(s, 1), where mscale(s, m) = 0.1 m ln(s) + 1 (1 for s <= 1);
//       0 = absent. (DeepSeek 2 files store 0.1 m; llama.cpp divides for
//       that family only, which this engine does not run.)
// NaN, infinite and negative values are refused naming the key (but for
// yarn_ext_factor's "not set"); absent keys change nothing, bit for bit.
// A deliberate difference: llama.cpp reads these keys only for some families
// (grok: the first four; mistral3: the betas and the multiplier) and ignores
// them for llama, qwen2 and gemma3, although convert_hf_to_gguf.py writes
// them for any model whose rope_scaling has them. Here every family reads
// them, as the transformers model the file was converted from uses them.
Status Model::ReadRopeScaling() {
  const ArchSpec& s = *spec_;
  auto get_float = [&](const char* suffix, float& out) -> Status {
    auto v = file_.GetFloat(Key(s, suffix));
    if (!v.ok()) return v.status().code() == StatusCode::kNotFound ? OkStatus() : v.status();
    out = static_cast<float>(*v);
    return OkStatus();
  };
  const std::string type_key = Key(s, "rope.scaling.type");
  std::string type = "linear";  // llama.cpp's default when the key is absent
  if (auto v = file_.GetString(type_key); v.ok()) {
    type = std::string(*v);
  } else if (v.status().code() != StatusCode::kNotFound) {
    return v.status();
  }
  if (type != "none" && type != "linear" && type != "yarn") {
    return UnimplementedError("model '" + file_.path() + "': key '" + type_key + "' is '" + type +
                              "'; supported: none, linear, yarn");
  }
  float factor = 0.0f;
  ELLM_RETURN_IF_ERROR(get_float("rope.scaling.factor", factor));
  if (factor < 0.0f || std::isnan(factor)) {
    return InvalidArgumentError("model '" + file_.path() + "': key '" +
                                Key(s, "rope.scaling.factor") + "' is " + std::to_string(factor) +
                                "; expected a positive factor");
  }
  float attn_factor = 1.0f;
  ELLM_RETURN_IF_ERROR(get_float("rope.scaling.attn_factor", attn_factor));
  // A YaRN key's value: finite, and >= 0 unless `negative_means_unset`.
  auto get_yarn = [&](const char* suffix, float& out, bool negative_means_unset) -> Status {
    ELLM_RETURN_IF_ERROR(get_float(suffix, out));
    if (std::isfinite(out) && (out >= 0.0f || negative_means_unset)) return OkStatus();
    char value[32];
    std::snprintf(value, sizeof(value), "%g", static_cast<double>(out));
    return InvalidArgumentError("model '" + file_.path() + "': key '" + Key(s, suffix) + "' is " +
                                value + "; expected a finite number >= 0");
  };
  float ext_factor = -1.0f, yarn_attn_factor = 1.0f, log_mul = 0.0f;
  ELLM_RETURN_IF_ERROR(get_yarn("rope.scaling.yarn_ext_factor", ext_factor, true));
  ELLM_RETURN_IF_ERROR(get_yarn("rope.scaling.yarn_attn_factor", yarn_attn_factor, false));
  ELLM_RETURN_IF_ERROR(get_yarn("rope.scaling.yarn_beta_fast", hp_.yarn_beta_fast, false));
  ELLM_RETURN_IF_ERROR(get_yarn("rope.scaling.yarn_beta_slow", hp_.yarn_beta_slow, false));
  ELLM_RETURN_IF_ERROR(get_yarn("rope.scaling.yarn_log_multiplier", log_mul, false));
  if (type != "none" && factor != 0.0f) hp_.rope_freq_scale = 1.0f / factor;
  if (ext_factor < 0.0f) ext_factor = type == "yarn" ? 1.0f : 0.0f;
  hp_.yarn_ext_factor = ext_factor;
  hp_.yarn_attn_factor = yarn_attn_factor;
  if (ext_factor != 0.0f) {
    // llama.cpp's get_mscale, operation for operation.
    auto mscale = [](float scale, float m) {
      return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f;
    };
    const float scale = 1.0f / hp_.rope_freq_scale;
    hp_.yarn_attn_factor =
        log_mul != 0.0f ? mscale(scale, 1.0f) / mscale(scale, log_mul) : mscale(scale, 1.0f);
    hp_.yarn_attn_factor *= 1.0f / (1.0f + 0.1f * std::log(scale));
  }
  hp_.yarn_attn_factor *= attn_factor;
  return OkStatus();
}

// Granite's four multipliers (Multipliers::kFromFile), read as llama.cpp's
// llama_model_granite::load_arch_hparams does: logit_scale required, the
// rest optional with 0 meaning "not applied" (src/models/granite.cpp).
Status Model::ReadMultipliers() {
  const ArchSpec& s = *spec_;
  auto get = [&](const char* suffix, float& out, bool required) -> Status {
    auto v = file_.GetFloat(Key(s, suffix));
    if (!v.ok()) {
      if (!required && v.status().code() == StatusCode::kNotFound) return OkStatus();
      return v.status();
    }
    const float f = static_cast<float>(*v);
    if (!std::isfinite(f) || f < 0.0f || (required && f == 0.0f)) {
      char value[32];
      std::snprintf(value, sizeof(value), "%g", static_cast<double>(f));
      return InvalidArgumentError("model '" + file_.path() + "': key '" + Key(s, suffix) + "' is " +
                                  value + "; expected a finite number > 0");
    }
    if (f != 0.0f) out = f;
    return OkStatus();
  };
  ELLM_RETURN_IF_ERROR(get("logit_scale", hp_.logit_scale, true));
  ELLM_RETURN_IF_ERROR(get("embedding_scale", hp_.embedding_scale, false));
  ELLM_RETURN_IF_ERROR(get("residual_scale", hp_.residual_scale, false));
  return get("attention.scale", hp_.query_scale, false);
}

Status Model::BindTensors() {
  const ArchSpec& s = *spec_;
  layers_.resize(static_cast<size_t>(hp_.n_layer));
  for (const TensorSpec& ts : s.tensors) {
    int count = ts.per_layer ? hp_.n_layer : 1;
    for (int il = 0; il < count; ++il) {
      const std::string name = TensorName(ts.name, il);
      const gguf::TensorInfo* t = file_.FindTensor(name);
      if (t == nullptr) {
        if (ts.required) {
          return NotFoundError("model '" + file_.path() + "' (" + std::string(s.name) +
                               ") has no tensor '" + name + "'");
        }
        continue;
      }
      std::vector<int64_t> want, got(t->ne, t->ne + t->n_dims);
      for (Dim d : ts.shape) want.push_back(Resolve(d, hp_));
      if (want != got) {
        return InvalidArgumentError("model '" + file_.path() + "': tensor '" + name +
                                    "' has shape " + ShapeOf(got) + "; the hyperparameters say " +
                                    ShapeOf(want));
      }
      if (ts.shape.size() == 1) {
        if (!quant::CanDequantize(t->type)) {
          return UnimplementedError("model '" + file_.path() + "': tensor '" + name +
                                    "' has type " + std::string(quant::TypeName(t->type)) +
                                    ", which is not supported");
        }
        std::vector<float> v(static_cast<size_t>(t->ne[0]));
        quant::DequantizeRow(t->type, t->data, v.data(), t->ne[0]);
        Layer* l = ts.per_layer ? &layers_[static_cast<size_t>(il)] : nullptr;
        switch (ts.role) {
          case Role::kOutputNorm:
            output_norm_ = std::move(v);
            break;
          case Role::kAttnNorm:
            l->attn_norm = std::move(v);
            break;
          case Role::kAttnQNorm:
            l->q_norm = std::move(v);
            break;
          case Role::kAttnKNorm:
            l->k_norm = std::move(v);
            break;
          case Role::kAttnPostNorm:
            l->post_attn_norm = std::move(v);
            break;
          case Role::kFfnNorm:
            l->ffn_norm = std::move(v);
            break;
          case Role::kFfnPostNorm:
            l->post_ffn_norm = std::move(v);
            break;
          case Role::kAttnQBias:
            l->q_bias = std::move(v);
            break;
          case Role::kAttnKBias:
            l->k_bias = std::move(v);
            break;
          case Role::kAttnVBias:
            l->v_bias = std::move(v);
            break;
          case Role::kRopeFreqs:
            rope_freqs_ = std::move(v);
            break;
          case Role::kRopeFactorsShort:
            rope_short_ = std::move(v);
            break;
          case Role::kRopeFactorsLong:
            rope_long_ = std::move(v);
            break;
          default:
            return InternalError("spec lists a 1-D tensor with a matrix role: " + name);
        }
        continue;
      }
      if (!quant::CanDequantize(t->type)) {
        return UnimplementedError("model '" + file_.path() + "': tensor '" + name + "' has type " +
                                  std::string(quant::TypeName(t->type)) +
                                  ", which is not supported");
      }
      ops::Weight w{
          t,      t->type, t->ne[0], t->ne[1], quant::RowBytes(quant::Traits(t->type), t->ne[0]),
          t->data};
      Layer* l = ts.per_layer ? &layers_[static_cast<size_t>(il)] : nullptr;
      switch (ts.role) {
        case Role::kTokenEmbd:
          token_embd_ = w;
          break;
        case Role::kOutput:
          output_ = w;
          break;
        case Role::kAttnQ:
          l->q = w;
          break;
        case Role::kAttnK:
          l->k = w;
          break;
        case Role::kAttnV:
          l->v = w;
          break;
        case Role::kAttnOutput:
          l->o = w;
          break;
        case Role::kFfnGate:
          l->gate = w;
          break;
        case Role::kFfnUp:
          l->up = w;
          break;
        case Role::kFfnDown:
          l->down = w;
          break;
        case Role::kAttnQkv: {
          const int64_t nq = Resolve(Dim::kQ, hp_), nk = Resolve(Dim::kKv, hp_);
          l->q = RowRange(w, 0, nq);
          l->k = RowRange(w, nq, nk);
          l->v = RowRange(w, nq + nk, w.rows - nq - nk);
          break;
        }
        case Role::kFfnGateUp:
          l->gate = RowRange(w, 0, hp_.n_ff);
          l->up = RowRange(w, hp_.n_ff, hp_.n_ff);
          break;
        default:
          return InternalError("spec lists a matrix tensor with a vector role: " + name);
      }
    }
  }
  if (output_.data == nullptr) {
    if (!s.tied_output_fallback) {
      return NotFoundError("model '" + file_.path() + "' has no tensor 'output.weight'");
    }
    output_ = token_embd_;
  }
  ELLM_ASSIGN_OR_RETURN(std::vector<bool> sliding, SlidingLayers());
  for (int il = 0; il < hp_.n_layer; ++il) {
    Layer& l = layers_[static_cast<size_t>(il)];
    l.sliding = sliding[static_cast<size_t>(il)];
    l.rope.base = l.sliding ? hp_.rope_base_swa : hp_.rope_base;
    l.rope.freq_factors = !rope_freqs_.empty()   ? rope_freqs_.data()
                          : !rope_short_.empty() ? rope_short_.data()
                                                 : nullptr;
    if (!l.sliding) {
      l.rope.freq_scale = hp_.rope_freq_scale;
      l.rope.ext_factor = hp_.yarn_ext_factor;
      l.rope.attn_factor = hp_.yarn_attn_factor;
      l.rope.corr_low = hp_.yarn_corr_low;
      l.rope.corr_high = hp_.yarn_corr_high;
    }
  }
  return OkStatus();
}

ops::RopeParams Model::RopeFor(const Layer& l, int64_t n_ctx) const {
  ops::RopeParams p = l.rope;
  if (rope_freqs_.empty() && n_ctx > hp_.n_ctx_orig) {
    p.freq_factors = rope_long_.empty() ? nullptr : rope_long_.data();
  }
  return p;
}

StatusOr<std::vector<bool>> Model::SlidingLayers() const {
  const ArchSpec& s = *spec_;
  std::vector<bool> sliding(static_cast<size_t>(hp_.n_layer), false);
  if (s.window == WindowPattern::kNone || hp_.sliding_window == 0) return sliding;
  // The file may spell the pattern out per layer (an array of bools) or give
  // its period; otherwise the family's default period applies.
  const std::string key = Key(s, "attention.sliding_window_pattern");
  int period = s.default_window_period;
  if (const gguf::Value* v = file_.Find(key)) {
    if (v->type == gguf::ValueType::kArray) {
      ELLM_ASSIGN_OR_RETURN(const gguf::Array* a, file_.GetArray(key, gguf::ValueType::kBool));
      if (a->count != static_cast<uint64_t>(hp_.n_layer)) {
        return InvalidArgumentError(
            "model '" + file_.path() + "': key '" + key + "' has " + std::to_string(a->count) +
            " entries; expected one per layer (" + std::to_string(hp_.n_layer) + ")");
      }
      for (size_t i = 0; i < sliding.size(); ++i) sliding[i] = a->raw[i] != 0;
      return sliding;
    }
    ELLM_ASSIGN_OR_RETURN(uint64_t p, file_.GetUint(key));
    if (p == 0 || p > 1024) {
      return InvalidArgumentError("model '" + file_.path() + "': key '" + key + "' is " +
                                  std::to_string(p) + "; expected a period of 1 to 1024 layers");
    }
    period = static_cast<int>(p);
  }
  for (int il = 0; il < hp_.n_layer; ++il)
    sliding[static_cast<size_t>(il)] = il % period < period - 1;
  return sliding;
}

}  // namespace ellm::model

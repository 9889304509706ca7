#include "kv_flags.h"

#include <cstdlib>

namespace ellm::cli {

std::vector<std::string> KvFlagNames() {
  return {"kv-type",     "attn-weights", "attn-scores", "kv-budget",   "spill-dir",
          "spill-level", "spill-read",   "sparse-attn", "sparse-sink", "sparse-local"};
}

Status ApplyKvFlags(const Flags& f, SessionOptions* o) {
  if (f.Has("kv-type")) {
    ELLM_ASSIGN_OR_RETURN(o->kv_type, ParseKvType(f.Get("kv-type")));
  }
  if (f.Has("attn-weights")) {
    const std::string w = f.Get("attn-weights");
    if (w != "f32" && w != "bf16") {
      return InvalidArgumentError("--attn-weights '" + w + "': expected f32 or bf16");
    }
    o->bf16_attention_weights = w == "bf16";
  }
  if (f.Has("attn-scores")) {
    auto s = ParseAttnScores(f.Get("attn-scores"));
    if (!s.ok()) return InvalidArgumentError("--attn-scores: " + s.status().message());
    o->attn_scores = *s;
  }
  SparseAttentionOptions& sp = o->sparse_attention;
  ELLM_ASSIGN_OR_RETURN(int64_t top_k, f.GetInt("sparse-attn", sp.top_k_blocks));
  ELLM_ASSIGN_OR_RETURN(int64_t sink, f.GetInt("sparse-sink", sp.sink_tokens));
  ELLM_ASSIGN_OR_RETURN(int64_t local, f.GetInt("sparse-local", sp.local_tokens));
  for (auto [name, v] : {std::pair{"--sparse-attn", top_k}, std::pair{"--sparse-sink", sink},
                         std::pair{"--sparse-local", local}}) {
    if (v < 0 || v > (int64_t{1} << 24)) {
      return InvalidArgumentError(std::string(name) + " must be in [0, 16777216]");
    }
  }
  sp.top_k_blocks = static_cast<int>(top_k);
  sp.sink_tokens = static_cast<int>(sink);
  sp.local_tokens = static_cast<int>(local);
  ELLM_ASSIGN_OR_RETURN(int64_t mib, f.GetInt("kv-budget", 0));
  if (mib < 0) return InvalidArgumentError("--kv-budget must be >= 0 (MiB)");
  if (mib > 0) o->kv_memory_budget = static_cast<uint64_t>(mib) << 20;
  if (f.Has("spill-dir")) {
    o->spill_dir = f.Get("spill-dir");
  } else if (o->kv_memory_budget > 0 && o->spill_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o->spill_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  ELLM_ASSIGN_OR_RETURN(int64_t level, f.GetInt("spill-level", o->spill_zstd_level));
  if (level < 0 || level > 19) {
    return InvalidArgumentError("--spill-level must be 0 (raw) or a zstd level 1..19");
  }
  o->spill_zstd_level = static_cast<int>(level);
  if (f.Has("spill-read")) {
    const std::string r = f.Get("spill-read");
    if (r != "copy" && r != "map") {
      return InvalidArgumentError("--spill-read '" + r + "': expected copy or map");
    }
    o->kv_spill_map = r == "map";
  }
  // The engine's own check, before any model is loaded.
  return o->Validate();
}

void AddKvStats(const KvStats& st, nlohmann::json* out) {
  (*out)["kv_spilled_bytes"] = st.spilled_bytes;
  (*out)["kv_compression_ratio"] = st.compression_ratio();
  (*out)["kv_peak_resident_bytes"] = st.peak_resident_bytes;
  (*out)["kv_read_back_bytes"] = st.read_back_bytes;
}

void AddAttentionSettings(const SessionOptions& o, nlohmann::json* out) {
  if (o.kv_memory_budget > 0) (*out)["kv_spill_read"] = o.kv_spill_map ? "map" : "copy";
  const AttnScores scores = AttnScoresUsed(o.kv_type, o.attn_scores);
  // Tiles round the weights to bf16 whatever attn_weights says.
  const bool bf16_weights = o.bf16_attention_weights || scores == AttnScores::kTiles;
  (*out)["attn_weights"] = bf16_weights ? "bf16" : "f32";
  (*out)["attn_scores"] = AttnScoresName(scores);
  const SparseAttentionOptions& sp = o.sparse_attention;
  (*out)["sparse_attention"] = sp.top_k_blocks;
  if (sp.top_k_blocks > 0) {
    (*out)["sparse_sink_tokens"] = sp.sink_tokens;
    (*out)["sparse_local_tokens"] = sp.local_tokens;
  }
}

}  // namespace ellm::cli

#include "kv_flags.h"

#include <cstdlib>

namespace ellm::cli {

std::vector<std::string> KvFlagNames() {
  return {"kv-type", "attn-weights", "kv-budget", "spill-dir"};
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
  ELLM_ASSIGN_OR_RETURN(int64_t mib, f.GetInt("kv-budget", 0));
  if (mib < 0) return InvalidArgumentError("--kv-budget must be >= 0 (MiB)");
  if (mib > 0) o->kv_memory_budget = static_cast<uint64_t>(mib) << 20;
  if (f.Has("spill-dir")) {
    o->spill_dir = f.Get("spill-dir");
  } else if (o->kv_memory_budget > 0 && o->spill_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o->spill_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return OkStatus();
}

void AddKvStats(const KvStats& st, nlohmann::json* out) {
  (*out)["kv_spilled_bytes"] = st.spilled_bytes;
  (*out)["kv_compression_ratio"] = st.compression_ratio();
  (*out)["kv_peak_resident_bytes"] = st.peak_resident_bytes;
  (*out)["kv_read_back_bytes"] = st.read_back_bytes;
}

}  // namespace ellm::cli

// Command-line flags shared by the commands that run the engine:
//   --kv-type bf16|f16|f32|q8_0   KV cache storage (default bf16)
//   --attn-weights f32|bf16       attention weights for the product with V
//                                 (bf16: opt-in, needs --kv-type bf16)
//   --attn-scores auto|pairs|f32|tiles  how a bf16 cache's scores are computed
//                                 (auto: the faster on this CPU; AttnScores)
//   --kv-budget MIB               resident KV limit; colder blocks spill
//   --spill-dir DIR               where spilled blocks go (default $TMPDIR or /tmp)
//   --spill-level L               0: raw spilled blocks (default), 1-19: zstd
//   --spill-read copy|map         how attention reads spilled blocks: copied
//                                 back (default) or in place from the mapped
//                                 file (raw blocks only; kv_cache.h)
//   --sparse-attn K               approximate attention in full-attention layers:
//                                 the top K blocks of 64 keys (0 = off, the default)
//   --sparse-sink N, --sparse-local N   the keys always read: the first N, and the
//                                 N before each query tile (default 64, 1024)
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "ellm/engine/engine.h"
#include "flags.h"

namespace ellm::cli {

// The flag names above, for Flags::Parse.
std::vector<std::string> KvFlagNames();
// Applies the flags to `o` (leaving fields whose flag is absent as they are),
// then SessionOptions::Validate(): a combination that cannot work fails here.
Status ApplyKvFlags(const Flags& f, SessionOptions* o);
// KV statistics as JSON fields (kv_spilled_bytes, kv_compression_ratio, ...).
void AddKvStats(const KvStats& st, nlohmann::json* out);
// The attention settings as JSON fields: attn_weights (f32|bf16),
// attn_scores (pairs|f32: what the bf16 cache's scores used, auto resolved;
// f32 for the other KV types), sparse_attention (top-k blocks, 0 = off;
// sparse_sink_tokens, sparse_local_tokens when on).
void AddAttentionSettings(const SessionOptions& o, nlohmann::json* out);

}  // namespace ellm::cli

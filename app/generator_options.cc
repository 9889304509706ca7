#include "ellm/app/generator_options.h"

namespace ellm::app {

pipelines::GeneratorOptions GeneratorOptionsFrom(const Config& config) {
  pipelines::GeneratorOptions o;
  o.engine.threads = config.model.threads;
  auto numa = ParseNumaMode(config.model.numa);
  o.engine.numa = numa.ok() ? *numa : NumaMode::kOff;
  o.engine.numa_node = config.model.numa_node;
  o.engine.mlock = config.model.mlock;
  o.engine.chat_template = config.model.chat_template;
  o.context = config.model.context;
  o.micro_batch = config.model.micro_batch;
  auto type = ParseKvType(config.model.kv_type);
  o.kv_type = type.ok() ? *type : KvType::kBF16;
  o.bf16_attention_weights = config.model.attn_weights == "bf16";
  auto scores = ParseAttnScores(config.model.attn_scores);
  o.attn_scores = scores.ok() ? *scores : AttnScores::kAuto;
  o.sparse_attention = {.top_k_blocks = config.model.sparse_top_k,
                        .sink_tokens = config.model.sparse_sink,
                        .local_tokens = config.model.sparse_local};
  o.kv_memory_budget = static_cast<uint64_t>(config.kv.memory_budget_mib) << 20;
  o.spill_dir = config.kv.spill_dir;
  o.spill_zstd_level = config.kv.spill_zstd_level;
  o.prefix_cache_dir = config.kv.prefix_cache_dir;
  o.prefix_cache_bytes = static_cast<uint64_t>(config.kv.prefix_cache_mib) << 20;
  return o;
}

}  // namespace ellm::app

// The configuration file (/etc/ellm/ellm.yaml) every front door reads: one
// struct per module with defaults, parsed once from YAML at start-up and
// validated before anything is touched. ellmd reads all of it; the ellm CLI
// reads it for --config (model, kv, pipelines, store, kafka, jobs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ellm/base/status.h"

namespace ellm::app {

struct ModelConfig {
  std::string path = "/var/lib/ellm/models/gemma-3-270m-q4_k_m.gguf";
  int threads = 0;  // 0 = one per core
  // Tokens of context per job (capped at the model's training context).
  int context = 32768;
  int micro_batch = 256;
  std::string kv_type = "bf16";  // bf16, f16, f32 or q8_0
  // Attention weights in the product with V: f32, or bf16 (opt-in, needs
  // kv_type bf16: faster where the CPU has AVX512_BF16, results change slightly).
  std::string attn_weights = "f32";
  // How a bf16 cache's scores are computed (AttnScores): auto (the faster
  // on this CPU), pairs (bf16 pair dot products) or f32 (widened keys).
  std::string attn_scores = "auto";
  // Approximate attention in full-attention layers (SparseAttentionOptions):
  // the top sparse_top_k blocks of 64 keys; 0 = off (exact, the default).
  int sparse_top_k = 0;
  int sparse_sink = 64;
  int sparse_local = 1024;
  std::string numa = "off";  // off, distribute, isolate, replicate
  int numa_node = -1;        // isolate: the node; -1 = the first
  bool mlock = false;        // lock weights and KV cache in RAM
  // gemma, llama3 or chatml; empty = recognised from the model file.
  std::string chat_template;
  Status Validate() const;
};

// The KV cache's memory: a resident budget, past which the oldest blocks of
// full-attention layers spill (compressed) to spill_dir.
struct KvConfig {
  int64_t memory_budget_mib = 0;  // key kv.memory_budget (MiB); 0 = no limit
  std::string spill_dir = "/var/lib/ellm/spill";
  int spill_zstd_level = 1;
  // Saved KV states of shared document prefixes; empty = no reuse.
  std::string prefix_cache_dir = "/var/lib/ellm/prefix-cache";
  int64_t prefix_cache_mib = 1024;
  Status Validate() const;
};

struct PipelinesConfig {
  // Directory of pipeline YAML files; empty: the shipped ones
  // (/usr/share/ellm/pipelines when installed).
  std::string dir;
  Status Validate() const { return OkStatus(); }
};

struct StoreConfig {
  std::string path = "/var/lib/ellm/ellm.db";
  Status Validate() const;
};

struct KafkaConfig {
  bool enabled = true;
  std::string brokers = "127.0.0.1:9092";
  std::string group_id = "ellmd";
  std::string jobs_topic = "ellm.jobs";
  std::string results_topic = "ellm.results";
  std::string dead_letter_topic = "ellm.jobs.dlq";
  // Static membership: a restart within session_timeout_ms gets the same
  // partitions back without a rebalance. Empty: "ellmd-<hostname>".
  std::string group_instance_id;
  int session_timeout_ms = 45000;
  int max_poll_interval_ms = 300000;
  // Seconds a running job may take to finish after SIGTERM.
  int shutdown_grace_s = 30;
  // Passed to librdkafka unchanged: security.protocol, ssl.*, sasl.*, ...
  std::map<std::string, std::string> properties;
  Status Validate() const;
};

struct JobsConfig {
  // Directories job documents may be read from (after resolving symlinks).
  std::vector<std::string> allowed_roots = {"/srv/ellm/inbox"};
  int64_t max_inline_bytes = 8 << 20;
  int max_documents = 32;
  // Starts of one job (crashes, lost partitions) before it is failed.
  int max_attempts = 3;
  Status Validate() const;
};

struct LogConfig {
  std::string level = "info";  // trace, debug, info, warn, error
  // text: human-readable (with timestamps on a terminal; without, and with
  // syslog priority prefixes, under systemd's journal); json: one JSON object
  // per line.
  std::string format = "text";
  Status Validate() const;
};

// Metrics and health endpoints (daemon/metrics.h); off unless enabled.
struct MetricsConfig {
  bool enabled = false;
  // host:port to listen on; host is an IPv4 address or a host name (no
  // IPv6: Debian's civetweb lacks it). Port 0 picks a free port (tests).
  std::string listen = "127.0.0.1:9464";
  Status Validate() const;
};

struct Config {
  ModelConfig model;
  KvConfig kv;
  PipelinesConfig pipelines;
  StoreConfig store;
  KafkaConfig kafka;
  JobsConfig jobs;
  LogConfig log;
  MetricsConfig metrics;
  Status Validate() const;
};

// Parses `path`; unknown keys, wrong types and invalid values are errors
// naming the file, line and key.
StatusOr<Config> LoadConfig(const std::string& path);
StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source);

}  // namespace ellm::app

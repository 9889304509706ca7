// The configuration file (/etc/ellm/ellm.yaml) every front door reads: one
// struct per module with defaults, parsed once from YAML at start-up and
// validated before anything is touched. ellmd reads all of it; the ellm CLI
// reads it for --config (model, kv, pipelines, store, kafka, jobs, extract).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/engine/engine.h"
#include "ellm/ingest/extract.h"
#include "ellm/server/api_server.h"

namespace ellm::app {

// Engine settings are parsed straight into the engine's own option types
// (enums by the engine's Parse* functions) and checked by their own
// Validate(), as CLI flags and Engine::NewSession check them.
struct ModelConfig {
  std::string path = "/var/lib/ellm/models/gemma-3-270m-q4_k_m.gguf";
  // Keys model.threads (0 = one per core), numa (off, distribute, isolate,
  // replicate), numa_node, mlock, chat_template (gemma, llama3, chatml or a
  // .jinja file; empty = recognised from the model file).
  EngineOptions engine;
  // Keys model.context (n_ctx: tokens per job, capped at the model's
  // training context), micro_batch, kv_type (bf16, f16, f32, q8_0),
  // attn_weights (f32, or bf16: opt-in, needs kv_type bf16), attn_scores
  // (auto, pairs, f32), sparse_top_k / sparse_sink / sparse_local; and the
  // kv: section's memory_budget (MiB; 0 = no limit), spill_dir,
  // spill_zstd_level.
  SessionOptions session{.n_ctx = 32768, .spill_dir = "/var/lib/ellm/spill"};
  Status Validate() const;
};

// Saved KV states of shared document prefixes (the KV budget and spill
// settings are the session's: ModelConfig::session).
struct KvConfig {
  std::string prefix_cache_dir = "/var/lib/ellm/prefix-cache";  // empty = no reuse
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
  // Finished jobs (their documents, results and events) older than this
  // many days are deleted at start-up and daily; 0 keeps them forever.
  int retention_days = 90;
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
  // Exactly-once results (docs/architecture.md): a job's result event, its
  // dead-letter copy and its offset commit go in one Kafka transaction, with
  // transactional.id "ellmd/<group_id>/<group instance id>". false: each is
  // sent on its own (at-least-once; readers deduplicate by job id).
  bool transactions = true;
  // Topics a job's reply_to may name: names, or prefixes ending in '*'.
  // Empty: any legal topic but Kafka's internal ones and the two above.
  std::vector<std::string> reply_topics;
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
  // Deliveries of a finished job whose result event or dead-letter copy the
  // broker refuses, before the job is failed as publish_failed and its
  // partition moves on.
  int max_publish_attempts = 5;
  // Seconds one attempt of a job may run before it is stopped and failed as
  // deadline_exceeded; also the cap on a message's own timeout_s. 0: no
  // limit. No limit by default: a job's run time is already bounded by
  // model.context and the pipelines' max_tokens, and what bound fits
  // depends a hundredfold on the model and the CPU.
  int64_t timeout_s = 0;
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

// The OpenAI-compatible HTTP API inside ellmd (off by default): keys
// http.enabled, listen (HOST:PORT), api_keys_file (a path, or
// "credential:NAME" for a systemd credential; required off loopback),
// tls_cert_file / tls_key_file, sessions, max_queue, context (tokens per
// API session), max_body_bytes, read_timeout_s, write_timeout_s,
// header_timeout_s, max_connections, max_incomplete_per_client,
// max_sessions_per_key,
// cors_origins. Replies share the model with the Kafka jobs and go first.
struct HttpConfig {
  bool enabled = false;
  std::string listen = "127.0.0.1:8080";
  std::string api_keys_file;
  server::ApiServerOptions server;  // host and port from `listen`; keys read at start
  Status Validate() const;
};

struct Config {
  ModelConfig model;
  KvConfig kv;
  PipelinesConfig pipelines;
  StoreConfig store;
  KafkaConfig kafka;
  JobsConfig jobs;
  // The PDF extractor's limits: keys extract.max_pages, max_bytes,
  // timeout_s (the wall-clock limit; the CPU-time limit is two thirds of
  // it, 120 of the default 180 s) and memory_mib (the address-space limit),
  // straight into the extractor's own options and checked by its Validate().
  ingest::ExtractOptions extract;
  LogConfig log;
  MetricsConfig metrics;
  HttpConfig http;
  Status Validate() const;
};

// Parses `path`; unknown keys, wrong types and invalid values are errors
// naming the file, line and key.
StatusOr<Config> LoadConfig(const std::string& path);
StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source);

}  // namespace ellm::app

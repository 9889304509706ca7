// The daemon's configuration: one struct per module with defaults, parsed
// once from YAML at start-up and validated before anything is touched.
#pragma once

#include <string>

#include "ellm/base/status.h"

namespace ellm::daemon {

struct ModelConfig {
  std::string path = "/var/lib/ellm/models/gemma-3-270m-q4_k_m.gguf";
  int threads = 0;  // 0 = one per core
  Status Validate() const;
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
  Status Validate() const;
};

struct LogConfig {
  std::string level = "info";  // trace, debug, info, warn, error
  Status Validate() const;
};

struct Config {
  ModelConfig model;
  StoreConfig store;
  KafkaConfig kafka;
  LogConfig log;
  Status Validate() const;
};

// Parses `path`; unknown keys, wrong types and invalid values are errors
// naming the file, line and key.
StatusOr<Config> LoadConfig(const std::string& path);
StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source);

}  // namespace ellm::daemon

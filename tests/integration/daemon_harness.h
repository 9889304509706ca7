// A harness for tests that run real `ellmd` processes against the real
// broker: writes a config, starts and signals daemons, creates topics,
// produces jobs and reads the store and topics back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ellm/ingest/kafka.h"
#include "ellm/store/job_store.h"

namespace ellm::testing {

struct DaemonConfig {
  std::string model_path;
  std::string brokers;
  std::string topic;
  std::string results_topic;
  std::string dead_letter_topic;
  std::string group;
  std::string instance;  // group.instance.id
  std::string store_path;
  std::string inbox;  // the one allowed root
  int session_timeout_ms = 6000;
  int max_poll_interval_ms = 300000;
  int shutdown_grace_s = 30;
  int max_attempts = 3;
  int context = 0;  // model.context; 0 = the default
  // model.attn_scores; empty = the default ("auto": bf16 pair products on
  // CPUs with AVX512_BF16, f32 elsewhere, a documented numeric difference).
  std::string attn_scores;
  bool metrics = false;       // metrics on 127.0.0.1, a free port (see MetricsPort)
  bool transactions = true;   // kafka.transactions
  std::string pipelines_dir;  // empty: the shipped pipelines
  std::map<std::string, std::string> kafka_properties;  // added to kafka.properties
};

// A daemon consuming `topic` of `brokers` as group <topic>-group and
// instance `instance`, results on <topic>.results and dead letters on
// <topic>.dlq, its store at <dir>/ellm.db and `inbox` its one allowed root;
// everything else at DaemonConfig's defaults.
DaemonConfig DaemonOn(const std::string& brokers, const std::string& model,
                      const std::string& topic, const std::string& dir, const std::string& inbox,
                      const std::string& instance);

class Daemon {
 public:
  // Starts `ellmd --config <dir>/<instance>.yaml`, logging to <dir>/<instance>.log.
  // `env` adds variables to the child's environment.
  static std::unique_ptr<Daemon> Start(const DaemonConfig& config, const std::string& dir,
                                       const std::map<std::string, std::string>& env = {});
  ~Daemon();  // SIGKILLs a daemon still running

  void Signal(int sig);
  // Waits for the process to exit; its exit code, 128+signal, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);
  bool Running();
  // Whether the process is stopped (SIGSTOP; state T in /proc).
  bool Stopped() const;
  std::string Log() const;
  // The metrics port the daemon logged, or 0.
  int MetricsPort() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  std::string log_path_;
};

// Creates `topic` with `partitions` partitions (librdkafka admin API).
bool CreateTopic(const std::string& brokers, const std::string& topic, int partitions);

// Polls `condition` every 100 ms until it is true or `timeout` passed.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Reads every message of `topic` from the start (a fresh group), stopping
// after `quiet` without new messages. Reads committed messages only
// (isolation.level=read_committed): what a transactional producer aborted,
// or has not committed yet, is not seen.
std::vector<ingest::KafkaMessage> ReadTopic(const std::string& brokers, const std::string& topic,
                                            std::chrono::milliseconds quiet);

// A count from the store, through its own read-only connection.
int64_t CountIn(const std::string& store_path, const std::string& sql);
// A text value from the store, likewise; empty on any error.
std::string TextIn(const std::string& store_path, const std::string& sql);

std::string UniqueName(const std::string& prefix);

}  // namespace ellm::testing

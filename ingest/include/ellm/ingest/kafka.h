// Thin adapters over librdkafka's C++ API that speak Status: a producer that
// waits for delivery, and a consumer in a consumer group with manual,
// synchronous offset commits (auto-commit off), so the job consumer can
// commit an offset only after the job's result is durably stored.
//
// Neither class is thread-safe; use one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ellm/base/status.h"

namespace RdKafka {
class KafkaConsumer;
class Producer;
}  // namespace RdKafka

namespace ellm::ingest {

struct KafkaOptions {
  std::string brokers = "127.0.0.1:19092";  // bootstrap.servers
  std::string client_id = "ellm";
  // Any other librdkafka property ("security.protocol", "sasl.*", ...).
  std::map<std::string, std::string> properties;
};

struct KafkaMessage {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;
  std::string payload;
};

class KafkaProducer {
 public:
  static StatusOr<std::unique_ptr<KafkaProducer>> Create(const KafkaOptions& options);
  ~KafkaProducer();

  // Sends one message and waits until the broker acknowledged it (acks=all,
  // idempotent) or `timeout` passed.
  Status Produce(const std::string& topic, const std::string& key, const std::string& payload,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  explicit KafkaProducer(std::unique_ptr<RdKafka::Producer> p);
  std::unique_ptr<RdKafka::Producer> producer_;
};

class KafkaConsumer {
 public:
  // Joins consumer group `group_id` and subscribes to `topics`. With no
  // committed offset the group starts at the earliest message.
  static StatusOr<std::unique_ptr<KafkaConsumer>> Create(const KafkaOptions& options,
                                                         const std::string& group_id,
                                                         const std::vector<std::string>& topics);
  ~KafkaConsumer();

  // The next message, or nullopt when none arrived within `timeout`.
  // Transient broker conditions (partition EOF, rebalances) are absorbed;
  // fatal errors return a Status.
  StatusOr<std::optional<KafkaMessage>> Poll(std::chrono::milliseconds timeout);
  // Commits `message.offset + 1` for its partition, synchronously.
  Status Commit(const KafkaMessage& message);
  // Leaves the group cleanly (so a successor gets the partitions at once).
  Status Close();

 private:
  explicit KafkaConsumer(std::unique_ptr<RdKafka::KafkaConsumer> c);
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  bool closed_ = false;
};

}  // namespace ellm::ingest

// Thin adapters over librdkafka's C++ API that speak Status: a producer that
// waits for delivery, and a consumer in a consumer group with manual,
// synchronous offset commits (auto-commit off), so the job consumer can
// commit an offset only after the job's result is durably stored. A
// transactional producer instead commits a consumed offset together with
// the messages it produced for it (KIP-447), or neither.
//
// Neither class is thread-safe; use one per thread.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ellm/base/status.h"

namespace RdKafka {
class ConsumerGroupMetadata;
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
  std::vector<std::pair<std::string, std::string>> headers;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
  std::string ToString() const { return topic + "[" + std::to_string(partition) + "]"; }
};

// A consumer's group membership at one moment (group id, generation, member
// id, instance id), for a transactional producer's offset commit: the group
// coordinator refuses that commit once the group has moved to a newer
// generation, so a member whose partitions were reassigned meanwhile (a
// zombie) cannot commit. Immutable; cheap to copy; safe to read from any
// thread. Empty when default-constructed.
class GroupMetadata {
 public:
  GroupMetadata() = default;
  bool empty() const { return !metadata_; }

 private:
  friend class KafkaConsumer;
  friend class KafkaProducer;
  std::shared_ptr<RdKafka::ConsumerGroupMetadata> metadata_;
};

// Told about partition assignment changes. Called on the thread that calls
// KafkaConsumer::Poll, from inside Poll.
class RebalanceListener {
 public:
  virtual ~RebalanceListener() = default;
  // The partitions now assigned (the whole assignment: the eager protocol
  // revokes everything before assigning). Return true to have them paused
  // at once, before any message of theirs is fetched.
  virtual bool OnAssigned(const std::vector<TopicPartition>& partitions) = 0;
  // The partitions are being taken away; `lost` when that happened without a
  // clean revoke (the session timed out), so another member may own them.
  virtual void OnRevoked(const std::vector<TopicPartition>& partitions, bool lost) = 0;
};

class KafkaProducer {
 public:
  // How long a message may wait for the broker's acknowledgement
  // (librdkafka's message.timeout.ms) unless `properties` set it.
  static constexpr std::chrono::milliseconds kDefaultMessageTimeout{30000};

  // With a `transactional_id` the producer is transactional: every message
  // goes in a transaction, opened by the first Produce (or
  // CommitTransaction) after the last commit or abort, and becomes visible
  // to read_committed consumers only when CommitTransaction succeeds. The
  // transactional id must be stable for one daemon instance and unique in
  // the cluster: a new producer with the same id fences the old one (its
  // open transaction is aborted, its next call fails). Create registers the
  // id with the broker (init_transactions); a broker that is away only
  // delays that to the first transaction. Errors that transactions cannot
  // work at all (not authorised, not supported) fail Create.
  static StatusOr<std::unique_ptr<KafkaProducer>> Create(const KafkaOptions& options,
                                                         const std::string& transactional_id = "");
  ~KafkaProducer();

  bool transactional() const { return !transactional_id_.empty(); }

  // Sends one message and waits for its delivery report: the broker's
  // acknowledgement (acks=all, idempotent), or librdkafka's definitive
  // failure, at the latest after message.timeout.ms (UNAVAILABLE, "Local:
  // Message timed out"). A message that timed out after it was sent may still
  // have been written, so a retry can repeat it (at-least-once: readers
  // deduplicate by key). After a fatal client error (such as a broken
  // idempotence sequence) the producer is created afresh, so the next call
  // works again.
  Status Produce(const std::string& topic, const std::string& key, const std::string& payload);
  // Same, with message headers (name, value) in order.
  Status Produce(const std::string& topic, const std::string& key, const std::string& payload,
                 const std::vector<std::pair<std::string, std::string>>& headers);

  // Transactional producers only. Adds `consumed.offset + 1` for its
  // partition, on behalf of `group`, to the open transaction (opening one if
  // none is) and commits it: the messages produced since the last commit or
  // abort and the offset become visible together, or neither does. On any
  // error the transaction is aborted (or the producer replaced, which aborts
  // it) and the error is kUnavailable: send everything again. The one
  // exception is a commit whose outcome stays unknown (the broker kept
  // timing out): the producer is replaced, and the caller must check the
  // group's committed offset (KafkaConsumer::Committed) before sending again.
  Status CommitTransaction(const KafkaMessage& consumed, const GroupMetadata& group);
  // Discards what was produced since the last commit. OK when no
  // transaction is open (or the producer is not transactional).
  Status AbortTransaction();

  // Raises a fatal client error, as a broker could, for tests of the recovery.
  void InjectFatalErrorForTest();
  // How many times a fatal error made the producer start afresh.
  int restarts() const { return restarts_; }
  // How many open transactions ended without a commit: aborted, or ended
  // by a new producer (a fatal error, or an abort that failed).
  int aborted_transactions() const { return aborted_transactions_; }

  // How long init_transactions, send_offsets_to_transaction and one
  // commit_transaction or abort_transaction call may block.
  static constexpr std::chrono::milliseconds kTransactionCallTimeout{30000};

 private:
  KafkaProducer() = default;
  Status Restart();
  // Transactional: registers the id (once per librdkafka producer) and opens
  // a transaction unless one is open.
  Status BeginIfNeeded();
  Status InitTransactions(std::chrono::milliseconds timeout);

  std::map<std::string, std::string> props_;
  std::string transactional_id_;
  std::chrono::milliseconds message_timeout_ = kDefaultMessageTimeout;
  std::unique_ptr<RdKafka::Producer> producer_;
  int restarts_ = 0;
  int aborted_transactions_ = 0;
  bool initialized_ = false;  // init_transactions succeeded on producer_
  bool in_transaction_ = false;
};

class KafkaConsumer {
 public:
  // Joins consumer group `group_id` and subscribes to `topics`. With no
  // committed offset the group starts at the earliest message. The eager
  // `roundrobin` assignor is the default (see ingest/README.md for why not
  // cooperative-sticky on librdkafka 2.0.2); `listener` may be null and must
  // outlive the consumer.
  static StatusOr<std::unique_ptr<KafkaConsumer>> Create(const KafkaOptions& options,
                                                         const std::string& group_id,
                                                         const std::vector<std::string>& topics,
                                                         RebalanceListener* listener = nullptr);
  ~KafkaConsumer();

  // The next message, or nullopt when none arrived within `timeout`.
  // Partition EOF and unknown topics are absorbed. A broker that is away
  // gives kUnavailable (librdkafka keeps reconnecting: log it and poll on);
  // a fatal client error gives kInternal (see FatalError).
  StatusOr<std::optional<KafkaMessage>> Poll(std::chrono::milliseconds timeout);
  // Commits `message.offset + 1` for its partition, synchronously.
  Status Commit(const KafkaMessage& message);
  // The group's committed offset for `tp` (the next message to consume; -1
  // when none), asked of the group coordinator. With read_committed (the
  // default) it waits for a transaction that carries an offset for `tp` to
  // end. Blocks up to `timeout`.
  StatusOr<int64_t> Committed(const TopicPartition& tp, std::chrono::milliseconds timeout);
  // This member's group membership now (see GroupMetadata).
  GroupMetadata Membership();

  // The current assignment.
  StatusOr<std::vector<TopicPartition>> Assignment();
  // Stops / restarts fetching from these partitions. A paused partition
  // delivers nothing; messages already fetched for it are dropped and
  // fetched again from the consumed position on Resume.
  Status Pause(const std::vector<TopicPartition>& partitions);
  Status Resume(const std::vector<TopicPartition>& partitions);
  // Messages between this member's positions and the partitions' high
  // watermarks, from librdkafka's cached watermarks (no broker round trip).
  int64_t Lag();
  // Makes `message` the next one fetched from its partition (to hand a job
  // back to the queue without committing past it). FAILED_PRECONDITION when
  // the partition was assigned so recently that librdkafka does not know
  // where it starts yet (its "Erroneous state"): try again after a poll.
  Status Rewind(const KafkaMessage& message);
  // Leaves the group cleanly (so a successor gets the partitions at once).
  Status Close();

  // After a fatal client error every call fails until the consumer is
  // replaced: the error's description, or nullopt while there is none. With
  // static membership (group.instance.id) librdkafka 2.0.2 can fence itself
  // after a broker outage: its session times out, it rejoins under the same
  // instance id, and the broker then answers the old member id with
  // FENCED_INSTANCE_ID, which librdkafka makes fatal (confluentinc/librdkafka
  // #3437). A new consumer with the same instance id joins normally.
  std::optional<std::string> FatalError();
  // Raises a fatal client error, as a broker could, for tests of the recovery.
  void InjectFatalErrorForTest();

 private:
  class Rebalancer;
  KafkaConsumer(std::unique_ptr<RdKafka::KafkaConsumer> c, std::unique_ptr<Rebalancer> r);
  std::unique_ptr<Rebalancer> rebalancer_;  // outlives consumer_ (declared first)
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  bool closed_ = false;
};

}  // namespace ellm::ingest

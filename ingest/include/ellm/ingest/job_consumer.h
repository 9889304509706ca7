// JobConsumer: takes jobs from the jobs topic one at a time and hands each to
// a JobHandler on a worker thread, committing a message's offset only after
// the handler says its outcome is durably stored.
//
// Threads: the thread calling Run() owns the Kafka consumer. While a job
// runs it keeps polling (every `poll_timeout`), so heartbeats, rebalances
// and max.poll.interval.ms are served however long the job takes. Once a
// job has run for `pause_after`, every assigned partition is paused until
// the consumer is idle again; messages delivered before the pause took
// effect are held, in order, and run next. (Pausing at once would cost every
// short job a fetch restart: librdkafka 2.0.2 resumes fetching only on its
// next broker wake-up, about a second later.)
//
// Rebalances (eager protocol): if the running job's partition is revoked and
// not assigned back, or lost, the job is cancelled and its offset is never
// committed here (the new owner runs it again; the store keeps one result).
// An offset is only committed for a partition this member still owns.
//
// Shutdown: when `stop` becomes true, no new job starts; a running job gets
// `shutdown_grace` to finish (then it is cancelled and left uncommitted);
// the consumer is closed, leaving the group (with static membership,
// `group.instance.id`, the broker keeps the member's partitions for
// session.timeout.ms so that a quick restart gets them back).
//
// Transactions (KIP-447): the handler may commit a message's offset itself,
// in a producer transaction with the job's events, using the GroupMetadata
// taken when the job started (kCommitted). A rebalance during the job moves
// the group to a newer generation, so that commit is refused even if the
// partition came back: the handler aborts and hands the message back, and
// the job is finished again from its stored outcome. A message handed back
// is checked against the group's committed offset before it runs again (a
// commit whose outcome was unknown may have gone through after all).
//
// Fatal client errors (see KafkaConsumer::FatalError): the running job is
// cancelled and left uncommitted, and the Kafka consumer is replaced by a
// new one, which rejoins the group and gets the uncommitted messages again.
// More than kMaxReplacements of these within ten minutes end Run with the
// error (two processes sharing a group.instance.id fence each other forever).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/ingest/kafka.h"

namespace ellm::ingest {

enum class HandleOutcome {
  kCommit,      // the job's result or failure is stored: commit the offset
  kCommitted,   // as kCommit, and the handler committed the offset itself
                // (a producer transaction with `group`)
  kRetryLater,  // nothing durable happened (cancelled, store unavailable,
                // a transaction aborted): deliver this message again, after
                // a back-off
};

class JobHandler {
 public:
  virtual ~JobHandler() = default;
  // Runs one message to a durable end. Called on the worker thread, one
  // message at a time. `cancel` becomes true when the job should stop
  // promptly (its partition moved, or shutdown ran out of grace); return
  // kRetryLater then unless the outcome was already stored. `group`: this
  // member's group membership when the job started, for a transactional
  // offset commit (KafkaProducer::CommitTransaction).
  virtual HandleOutcome Handle(const KafkaMessage& message, const GroupMetadata& group,
                               const std::atomic<bool>& cancel) = 0;
};

struct JobConsumerOptions {
  KafkaOptions kafka;  // brokers, client.id, and pass-through properties
                       // (security.*, sasl.*, group.instance.id, timeouts)
  std::string group_id = "ellmd";
  std::string jobs_topic = "ellm.jobs";
  std::chrono::milliseconds poll_timeout{100};
  std::chrono::milliseconds pause_after{1000};
  std::chrono::milliseconds shutdown_grace{30000};
  // Back-off after kRetryLater and between failed commits: doubles from
  // `retry_backoff_initial` up to `retry_backoff_max`.
  std::chrono::milliseconds retry_backoff_initial{500};
  std::chrono::milliseconds retry_backoff_max{30000};
  // Called on the consumer thread at every poll (about every poll_timeout):
  // proof of life for a watchdog. May be empty.
  std::function<void()> tick;
  // Called about every 5 s with the consumer lag (messages not yet
  // consumed on the assigned partitions). May be empty.
  std::function<void(int64_t)> on_lag;
  // Each may be empty; called on the consumer thread. `on_retry`: a
  // kRetryLater outcome (the message comes again after the back-off).
  // `on_replaced`: a Kafka consumer replaced after a fatal error.
  // `on_consuming`: whether the consumer is consuming, at every change: ""
  // once partitions are assigned, else why not ("joining the consumer
  // group", "no partitions assigned", "rebalancing", "partitions lost (...)",
  // "replacing the consumer after a fatal error: ...", "closing").
  std::function<void()> on_retry;
  std::function<void()> on_replaced;
  std::function<void(const std::string&)> on_consuming;
};

struct JobConsumerStats {
  int64_t committed = 0;  // messages whose offset was committed (here or by
                          // the handler)
  int64_t retried = 0;    // kRetryLater outcomes
  int64_t abandoned = 0;  // jobs cancelled because their partition moved
  int64_t replaced = 0;   // Kafka consumers replaced after a fatal error
};

class JobConsumer : private RebalanceListener {
 public:
  // `handler` must outlive the consumer.
  static StatusOr<std::unique_ptr<JobConsumer>> Create(const JobConsumerOptions& options,
                                                       JobHandler* handler);
  ~JobConsumer() override;

  // Consumes until `stop` is true, then shuts down as described above.
  // Returns OK after a clean shutdown; an error when the consumer cannot be
  // replaced after a fatal client error, or has been too often.
  Status Run(const std::atomic<bool>& stop);

  const JobConsumerStats& stats() const { return stats_; }

  // Raises a fatal client error in the current Kafka consumer, for tests of
  // the recovery. Call it from the handler while its job runs (the consumer
  // is only replaced between jobs).
  void InjectFatalErrorForTest();

  static constexpr size_t kMaxReplacements = 5;

 private:
  JobConsumer(const JobConsumerOptions& options, JobHandler* handler)
      : options_(options), handler_(handler) {}
  bool OnAssigned(const std::vector<TopicPartition>& partitions) override;
  void OnRevoked(const std::vector<TopicPartition>& partitions, bool lost) override;

  // One turn of Run: the next held or polled message, if any.
  Status Step(const std::atomic<bool>& stop);
  // `failure` came from a consumer with a fatal error: replaces it (OK), or
  // returns the error when it is not fatal or replacements ran out.
  Status ReplaceAfterFatalError(const Status& failure);
  Status RunOne(const KafkaMessage& message, const std::atomic<bool>& stop);
  // Delivers `message` again after the back-off (kRetryLater).
  Status HandBack(const KafkaMessage& message, const std::atomic<bool>& stop);
  // Rewinds `message`'s partition to it while the partition is ours. A
  // partition assigned again a moment ago (a rebalance while the job ran)
  // cannot be rewound until librdkafka has looked up where it starts, so
  // this polls and tries again for up to 10 s.
  Status RewindOwned(const KafkaMessage& message);
  // Whether `message`, handed back earlier, has been committed meanwhile
  // (see the transactions note above); an error when that cannot be known.
  StatusOr<bool> CommittedMeanwhile(const KafkaMessage& message);
  // Polls (serving the group) for `duration`, holding any message that
  // arrives; pauses once a job has run for `pause_after`. Returns early
  // when `until` is true.
  Status Serve(std::chrono::milliseconds duration, const std::atomic<bool>* until = nullptr);
  // One poll of up to `timeout`: serves rebalances and holds a message that
  // arrives. A broker that is away is logged (at most every 30 s), not an
  // error.
  Status PollOnce(std::chrono::milliseconds timeout);
  // Logs a broker-away status at most every 30 s.
  void LogUnavailable(const Status& status);
  void DropHeld(const TopicPartition& tp);
  bool Owns(const TopicPartition& tp);
  Status CommitWithRetry(const KafkaMessage& message, const std::atomic<bool>& stop);
  Status PauseAll();
  Status ResumeAll();
  std::chrono::milliseconds NextBackoff();

  JobConsumerOptions options_;
  JobHandler* handler_;
  std::unique_ptr<KafkaConsumer> consumer_;
  JobConsumerStats stats_;

  // State of the running job; touched by the rebalance callbacks, which run
  // inside Poll on the Run() thread. `cancel_` is also read by the worker.
  bool job_active_ = false;
  bool paused_ = false;
  std::deque<KafkaMessage> held_;  // delivered, not yet run, in order
  TopicPartition job_partition_;
  bool revoke_pending_ = false;
  std::atomic<bool> cancel_{false};
  int consecutive_retries_ = 0;
  // The last message handed back: checked by CommittedMeanwhile when it
  // comes again.
  std::optional<std::pair<TopicPartition, int64_t>> handed_back_;
  std::chrono::steady_clock::time_point last_unavailable_log_{};
  std::chrono::steady_clock::time_point job_started_{};
  std::chrono::steady_clock::time_point last_lag_report_{};
  static constexpr std::chrono::minutes kReplaceWindow{10};
  std::vector<std::chrono::steady_clock::time_point> replaced_at_;  // within the window
  void Tick();
  void Consuming(const std::string& why_not);
};

}  // namespace ellm::ingest

// JobRunner: the daemon's JobHandler, the Kafka side of a job. For each
// message from the jobs topic: reload the pipelines if SIGHUP asked for it,
// validate the message (a bad one becomes a failed job plus a dead-letter
// copy), then hand it to app::RunJob (the job sequence: begin, run, store
// the outcome, publish through a KafkaResultPublisher) and map its outcome
// to the consumer's: kDone is kCommit, only after the outcome is durable in
// SQLite and its events are acknowledged by the broker; otherwise
// kRetryLater, and the redelivery finds the job's state in the store and
// finishes what is left (events are recorded as published in the store, so
// each goes out once unless the process dies between the broker's ack and
// that record).
//
// With a transactional producer (kafka.transactions) each message's events
// and its offset commit are one Kafka transaction (KafkaResultPublisher::
// Commit), and the outcome is kCommitted: a read_committed reader of the
// results topic sees each job once, and the store records the events only
// after the commit.
//
// Runs on the consumer's worker thread; owns nothing shared with others.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "ellm/app/run_job.h"
#include "ellm/ingest/job_consumer.h"
#include "ellm/ingest/job_message.h"
#include "ellm/ingest/kafka.h"
#include "ellm/pipelines/processor.h"
#include "ellm/store/job_store.h"

namespace ellm::daemon {

struct JobRunnerOptions {
  std::string results_topic = "ellm.results";
  std::string dead_letter_topic = "ellm.jobs.dlq";
  ingest::JobMessageLimits limits;  // `pipelines` is filled from the registry
  // Test-only fault injection: SIGKILL this process right after a result is
  // committed to SQLite, before anything else (ELLM_TEST_CRASH_AFTER_STORE=1).
  bool crash_after_store_commit = false;
  // Test-only: SIGKILL mid-run of this job, every time (ELLM_TEST_CRASH_IN_JOB).
  std::string crash_in_job;
  // Test-only: raise `signal_after_publish` in this process once, right
  // after the result event of job `signal_after_publish_job` is
  // acknowledged and before its offset is committed
  // (ELLM_TEST_KILL_AFTER_PUBLISH / ELLM_TEST_STOP_AFTER_PUBLISH=<job id>).
  // With `signal_after_publish_once_file`, only if this process is the first
  // to create that file (one signal among several daemons;
  // ELLM_TEST_AFTER_PUBLISH_ONCE=<path>).
  std::string signal_after_publish_job;
  int signal_after_publish = 0;
  std::string signal_after_publish_once_file;
  int max_publish_attempts = 5;  // jobs.max_publish_attempts (app::RunJobOptions)
  // jobs.timeout_s: the limit on one attempt, and the cap on a message's
  // timeout_s (app::JobTimeout); 0 = none.
  int64_t timeout_s = 0;
  std::string worker;  // recorded with each attempt, e.g. "ellmd-host/1234"
  // Told what the runner is doing ("running job X", "idle"), for systemd's
  // STATUS= line. May be empty.
  std::function<void(const std::string&)> status;
  // Builds a fresh registry from the pipeline files (SIGHUP). Called on the
  // worker thread between jobs when `reload_requested` is set; on error the
  // old pipelines stay. May be empty.
  std::function<StatusOr<std::unique_ptr<pipelines::ProcessorRegistry>>()> reload;
  std::atomic<bool>* reload_requested = nullptr;
  // Told about every finished job (pipeline, succeeded, seconds) and every
  // result's token counts and timings. May be empty.
  std::function<void(const std::string&, bool, double)> on_finished;
  std::function<void(const pipelines::PipelineOutput&)> on_result;
  // Told about every failure: a run's (pipeline, transient) and an invalid
  // message's (its pipeline as given, false). May be empty.
  std::function<void(const std::string&, bool)> on_failure;
  // Each may be empty. `on_dead_letter`: a copy acknowledged on the
  // dead-letter topic. `on_producer_replaced`: the producer started afresh
  // after a fatal error (KafkaProducer::restarts), and
  // `on_transaction_aborted`: a transaction ended without its commit
  // (KafkaProducer::aborted_transactions), each told after the message whose
  // sends did it. `progress`: app::RunJobOptions::progress.
  std::function<void()> on_dead_letter;
  std::function<void()> on_producer_replaced;
  std::function<void()> on_transaction_aborted;
  std::function<void(const std::string&, const std::string&, const pipelines::Progress&)> progress;
  // Held while a job runs (app::Runtime::job_mutex: jobs from other doors,
  // such as HTTP, wait their turn). May be null.
  std::mutex* job_mutex = nullptr;
  // The producer's message.max.bytes (KafkaResultPublisher).
  size_t max_message_bytes = 1000000;
};

class KafkaResultPublisher;

class JobRunner : public ingest::JobHandler {
 public:
  // All pointers must outlive the runner.
  JobRunner(store::JobStore* store, ingest::KafkaProducer* producer,
            pipelines::ProcessorRegistry* registry, JobRunnerOptions options);

  ingest::HandleOutcome Handle(const ingest::KafkaMessage& message,
                               const ingest::GroupMetadata& group,
                               const std::atomic<bool>& cancel) override;

 private:
  ingest::HandleOutcome HandleOne(const ingest::KafkaMessage& message,
                                  const ingest::GroupMetadata& group,
                                  const std::atomic<bool>& cancel);
  ingest::HandleOutcome HandleInvalid(const ingest::KafkaMessage& message,
                                      const ingest::ParsedJob& parsed,
                                      const ingest::GroupMetadata& group);
  // The publisher for `message`'s events.
  std::unique_ptr<KafkaResultPublisher> Publisher(const ingest::KafkaMessage& message,
                                                  const ingest::GroupMetadata& group);
  // kDone's outcome: kCommitted when the publisher committed the offset.
  ingest::HandleOutcome Done() const;
  void MaybeReload();
  // The options of app::RunJob for one message (publishing through `publisher`).
  app::RunJobOptions RunOptions(app::ResultPublisher* publisher) const;
  // Tells options_.on_producer_replaced and on_transaction_aborted what
  // happened to the producer since the last call.
  void ReportProducerEvents();

  store::JobStore* store_;
  ingest::KafkaProducer* producer_;
  pipelines::ProcessorRegistry* registry_;
  std::unique_ptr<pipelines::ProcessorRegistry> reloaded_;  // after a SIGHUP
  JobRunnerOptions options_;
  int producer_restarts_seen_ = 0;
  int aborted_transactions_seen_ = 0;
  bool signalled_after_publish_ = false;
};

// The result event (JSON, version 1) for a finished job; see README.
std::string ResultEventJson(const store::JobRecord& job);

// app::ResultPublisher for one message from the jobs topic: result events to
// the job's reply_to or `results_topic`; the dead-letter copy is `message`'s
// original bytes to `dead_letter_topic`, why it failed in headers
// (ellm.job_id, ellm.error.code, ellm.error.message,
// ellm.source.{topic,partition,offset}). Each call waits for the broker's
// delivery report. With a transactional producer it is atomic: Commit
// commits the producer's transaction with `message`'s offset on behalf of
// `group` (KafkaProducer::CommitTransaction); Abort aborts it. `producer`,
// `message` and `group` must outlive it.
class KafkaResultPublisher : public app::ResultPublisher {
 public:
  // `max_message_bytes`: the largest message the producer sends
  // (message.max.bytes); a dead-letter copy that would not fit is replaced
  // by a reference to the original (its topic, partition and offset).
  KafkaResultPublisher(ingest::KafkaProducer* producer, const ingest::KafkaMessage* message,
                       std::string results_topic, std::string dead_letter_topic,
                       size_t max_message_bytes = 1000000,
                       std::function<void()> on_dead_letter = nullptr,
                       const ingest::GroupMetadata* group = nullptr)
      : producer_(producer),
        message_(message),
        results_topic_(std::move(results_topic)),
        dead_letter_topic_(std::move(dead_letter_topic)),
        max_message_bytes_(max_message_bytes),
        on_dead_letter_(std::move(on_dead_letter)),
        group_(group) {}

  bool atomic() const override { return producer_->transactional(); }
  StatusOr<std::string> DeadLetter(const std::string& job_id, const std::string& error_code,
                                   const std::string& error_message) override;
  StatusOr<std::string> Publish(const store::JobRecord& job) override;
  Status Commit() override;
  void Abort() override;

  // Test-only: called with the job id after each acknowledged result event.
  void set_after_publish(std::function<void(const std::string&)> f) {
    after_publish_ = std::move(f);
  }

 private:
  ingest::KafkaProducer* producer_;
  const ingest::KafkaMessage* message_;
  std::string results_topic_;
  std::string dead_letter_topic_;
  size_t max_message_bytes_;
  std::function<void()> on_dead_letter_;  // after each acknowledged copy; may be empty
  const ingest::GroupMetadata* group_;
  std::function<void(const std::string&)> after_publish_;
  // Copies acknowledged but not yet committed (atomic), for on_dead_letter_.
  int uncommitted_dead_letters_ = 0;
};

}  // namespace ellm::daemon

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
  // after a fatal error (KafkaProducer::restarts), told after the message
  // whose sends did it. `progress`: app::RunJobOptions::progress.
  std::function<void()> on_dead_letter;
  std::function<void()> on_producer_replaced;
  std::function<void(const std::string&, const std::string&, const pipelines::Progress&)> progress;
  // Held while a job runs (app::Runtime::job_mutex: jobs from other doors,
  // such as HTTP, wait their turn). May be null.
  std::mutex* job_mutex = nullptr;
  // The producer's message.max.bytes (KafkaResultPublisher).
  size_t max_message_bytes = 1000000;
};

class JobRunner : public ingest::JobHandler {
 public:
  // All pointers must outlive the runner.
  JobRunner(store::JobStore* store, ingest::KafkaProducer* producer,
            pipelines::ProcessorRegistry* registry, JobRunnerOptions options);

  ingest::HandleOutcome Handle(const ingest::KafkaMessage& message,
                               const std::atomic<bool>& cancel) override;

 private:
  ingest::HandleOutcome HandleOne(const ingest::KafkaMessage& message,
                                  const std::atomic<bool>& cancel);
  ingest::HandleOutcome HandleInvalid(const ingest::KafkaMessage& message,
                                      const ingest::ParsedJob& parsed);
  void MaybeReload();
  // The options of app::RunJob for one message (publishing through `publisher`).
  app::RunJobOptions RunOptions(app::ResultPublisher* publisher) const;
  // Tells options_.on_producer_replaced about restarts since the last call.
  void ReportProducerRestarts();

  store::JobStore* store_;
  ingest::KafkaProducer* producer_;
  pipelines::ProcessorRegistry* registry_;
  std::unique_ptr<pipelines::ProcessorRegistry> reloaded_;  // after a SIGHUP
  JobRunnerOptions options_;
  int producer_restarts_seen_ = 0;
};

// The result event (JSON, version 1) for a finished job; see README.
std::string ResultEventJson(const store::JobRecord& job);

// app::ResultPublisher for one message from the jobs topic: result events to
// the job's reply_to or `results_topic`; the dead-letter copy is `message`'s
// original bytes to `dead_letter_topic`, why it failed in headers
// (ellm.job_id, ellm.error.code, ellm.error.message,
// ellm.source.{topic,partition,offset}). Each call waits for the broker's
// delivery report. `producer` and `message` must outlive it.
class KafkaResultPublisher : public app::ResultPublisher {
 public:
  // `max_message_bytes`: the largest message the producer sends
  // (message.max.bytes); a dead-letter copy that would not fit is replaced
  // by a reference to the original (its topic, partition and offset).
  KafkaResultPublisher(ingest::KafkaProducer* producer, const ingest::KafkaMessage* message,
                       std::string results_topic, std::string dead_letter_topic,
                       size_t max_message_bytes = 1000000,
                       std::function<void()> on_dead_letter = nullptr)
      : producer_(producer),
        message_(message),
        results_topic_(std::move(results_topic)),
        dead_letter_topic_(std::move(dead_letter_topic)),
        max_message_bytes_(max_message_bytes),
        on_dead_letter_(std::move(on_dead_letter)) {}

  StatusOr<std::string> DeadLetter(const std::string& job_id, const std::string& error_code,
                                   const std::string& error_message) override;
  StatusOr<std::string> Publish(const store::JobRecord& job) override;

 private:
  ingest::KafkaProducer* producer_;
  const ingest::KafkaMessage* message_;
  std::string results_topic_;
  std::string dead_letter_topic_;
  size_t max_message_bytes_;
  std::function<void()> on_dead_letter_;  // after each acknowledged copy; may be empty
};

}  // namespace ellm::daemon

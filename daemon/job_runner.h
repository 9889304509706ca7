// JobRunner: the daemon's JobHandler. For each message from the jobs topic:
// validate it (a bad message becomes a failed job plus a dead-letter copy),
// record its start in the store (a job already finished is not run again),
// run its pipeline, store the outcome, then publish a result event. Every
// path ends in kCommit only after the outcome is durable in SQLite and its
// events are acknowledged by the broker; otherwise kRetryLater, and the
// redelivery finds the job's state in the store and finishes what is left
// (events are recorded as published in the store, so each goes out once
// unless the process dies between the broker's ack and that record).
//
// Runs on the consumer's worker thread; owns nothing shared with others.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

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
  std::function<void(const store::ResultRecord&)> on_result;
};

class JobRunner : public ingest::JobHandler {
 public:
  // All pointers must outlive the runner.
  JobRunner(store::JobStore* store, ingest::KafkaProducer* producer,
            pipelines::ProcessorRegistry* registry, JobRunnerOptions options);

  ingest::HandleOutcome Handle(const ingest::KafkaMessage& message,
                               const std::atomic<bool>& cancel) override;

 private:
  ingest::HandleOutcome HandleInvalid(const ingest::KafkaMessage& message,
                                      const ingest::ParsedJob& parsed);
  // Publishes the result event of a finished job (and, for a failure, the
  // dead-letter copy of `message`) unless the store says it went out.
  ingest::HandleOutcome Finish(const std::string& job_id, const ingest::KafkaMessage& message);
  Status DeadLetter(const std::string& job_id, const ingest::KafkaMessage& message,
                    const std::string& code, const std::string& error);

  void MaybeReload();

  store::JobStore* store_;
  ingest::KafkaProducer* producer_;
  pipelines::ProcessorRegistry* registry_;
  std::unique_ptr<pipelines::ProcessorRegistry> reloaded_;  // after a SIGHUP
  JobRunnerOptions options_;
};

// The result event (JSON, version 1) for a finished job; see README.
std::string ResultEventJson(const store::JobRecord& job);

}  // namespace ellm::daemon

// RunJob: the job sequence, written once for every front door. For one job:
//
//   1. Begin: JobStore::Begin records the start of an attempt before any
//      work. A job already finished (succeeded or failed) is never run
//      again; a job started jobs.max_attempts times without finishing is
//      failed ("gave up"). Both go straight to step 4.
//   2. Run: the pipeline's Processor::Run, watching `cancel` and the job's
//      deadline (RunJobOptions::timeout). A cancelled job stores nothing,
//      gives its attempt back (JobStore::Release: it is queued again and
//      the cancellation does not count towards jobs.max_attempts) and is
//      kRetryLater. A job stopped by its deadline fails (permanently) with
//      error_code deadline_exceeded.
//   3. Succeed or Fail: the outcome is stored in one SQLite transaction
//      (the first outcome stored wins). With retry_transient, a transient
//      failure (the pipeline result says so: disk full, out of memory
//      (std::bad_alloc is caught here), a failed fork of the extractor)
//      stores no outcome: the job is queued again keeping its attempt, with
//      a `transient_error` event (JobStore::Requeue), and is kRetryLater,
//      so the consumer tries it again after its back-off. A transient
//      failure of the last of jobs.max_attempts attempts fails the job as
//      attempts_exhausted, naming that error. Any other failure (and any
//      failure without retry_transient) is stored at once.
//   4. Publish (with a ResultPublisher): the job is read back from the
//      store; a failed job without a `dead_lettered` event gets its
//      dead-letter copy sent, then the event recorded; a job without a
//      `published` event gets its result event sent, then the event
//      recorded. An error is kRetryLater, and the next call finds the
//      outcome stored (step 1) and sends only what is missing. A broker
//      away, timing out or busy (Unavailable, DeadlineExceeded,
//      ResourceExhausted) is waited out without limit; any other refusal is
//      recorded as a `publish_error` event, and after max_publish_attempts
//      of them the job is failed with error_code publish_failed (its result
//      kept) and kDone: an event that cannot be delivered (a topic that
//      refuses it, a message larger than the broker takes) must not hold
//      its partition. Last, ResultPublisher::Commit; with an atomic
//      publisher the events are recorded only after it (see there).
//
// kDone means the outcome is durable and every event acknowledged: the
// daemon may commit the message's offset. The Kafka side (parsing the
// message, the commit, reloads) stays in daemon/job_runner.cc; the CLI
// passes no publisher.
//
// Thread-compatible: one job at a time per JobStore.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/ingest/job_message.h"
#include "ellm/pipelines/processor.h"
#include "ellm/store/job_store.h"

namespace ellm::app {

// Where a finished job's events go (the daemon: Kafka topics). RunJob
// records each event in the store after the call returns OK, so an
// implementation only sends; each must block until the destination has
// acknowledged (an OK that was not acknowledged would lose the event).
//
// An atomic publisher (the daemon with Kafka transactions) makes what it
// sent visible only at Commit, all of it together with the job's message
// being marked consumed, or none of it; RunJob then records the events
// after Commit succeeds, and after an error calls Abort and sends all of
// them again on the next delivery.
class ResultPublisher {
 public:
  virtual ~ResultPublisher() = default;
  virtual bool atomic() const { return false; }
  // Ends the job's publishing: an atomic publisher makes everything sent
  // since the last Commit or Abort visible (or, with nothing sent, just
  // marks the message consumed). An error means none of it is. Called once
  // for every job that reaches kDone, and only then.
  virtual Status Commit() { return OkStatus(); }
  // Discards what was sent since the last Commit (atomic publishers).
  virtual void Abort() {}
  // Sends a copy of the request that made `job_id` fail, with why.
  // Returns where it went (the `dead_lettered` event's detail).
  virtual StatusOr<std::string> DeadLetter(const std::string& job_id, const std::string& error_code,
                                           const std::string& error_message) = 0;
  // Sends the result event of the finished `job` (succeeded or failed).
  // Returns where it went (the `published` event's detail).
  virtual StatusOr<std::string> Publish(const store::JobRecord& job) = 0;
};

enum class JobOutcome {
  kDone,        // outcome durable, events acknowledged: commit, report
  kRetryLater,  // nothing durable, or an event not yet out: deliver again later
};

// kDebug: what only a debug log carries, such as a job's output text
// (summaries are the users' data and stay out of logs at info).
enum class LogLevel { kDebug, kInfo, kWarn, kError };

struct RunJobOptions {
  ResultPublisher* publisher = nullptr;  // none: the outcome is only stored
  // Deliveries of a finished job whose events the broker refuses (not
  // transient errors) before it is given up as publish_failed (the
  // consumer backs off between them).
  int max_publish_attempts = 5;
  // Test-only fault injection: SIGKILL this process right after a success is
  // committed to the store, before anything else (ELLM_TEST_CRASH_AFTER_STORE=1).
  bool crash_after_store_commit = false;
  // Test-only fault injection: SIGKILL this process 200 ms into the run of
  // the job with this id (mid-inference), every time it runs: a document
  // that crashes the engine (ELLM_TEST_CRASH_IN_JOB=<job id>). Its attempts
  // are counted by Begin, so after jobs.max_attempts it is failed as
  // attempts_exhausted without running again.
  std::string crash_in_job;
  // How long one attempt may run before it is stopped and failed as
  // deadline_exceeded; 0 = no limit. `timeout_source` names where the limit
  // came from in that error ("jobs.timeout_s"). See JobTimeout.
  std::chrono::seconds timeout{0};
  std::string timeout_source;
  // Whether the caller delivers a kRetryLater job again (a queue: the
  // daemon's consumer, the HTTP API's inbox). Then a transient failure is
  // queued again (step 3); otherwise (the CLI) it is stored as the job's
  // failure at once, under its own error code.
  bool retry_transient = false;
  // Each may be empty. `status`: what is running ("running job X (P)",
  // "idle"). `on_finished`: a run whose outcome was stored (pipeline,
  // succeeded, seconds). `on_failure`: a run that failed (pipeline,
  // transient), stored or not. `on_result`: a success's token counts and
  // timings. `log`: one line about the job, starting "job=<id> ".
  std::function<void(const std::string&)> status;
  std::function<void(const std::string&, bool, double)> on_finished;
  std::function<void(const std::string&, bool)> on_failure;
  std::function<void(const pipelines::PipelineOutput&)> on_result;
  std::function<void(LogLevel, const std::string&)> log;
  // May be empty: the running job's steps (Processor::set_progress: "map
  // 2/5", "prefill" positions fed of the prompt's, "generate"), with the
  // job's id and pipeline; on the thread that runs the job, between its
  // "running job" and "idle" statuses. The processor is given it for this
  // run only.
  std::function<void(const std::string& job_id, const std::string& pipeline,
                     const pipelines::Progress&)>
      progress;
};

struct JobRun {
  JobOutcome outcome = JobOutcome::kRetryLater;
  // What Begin decided and the job's status after this call (valid when
  // Begin succeeded; kQueued when cancelled (the attempt given back),
  // kRunning when the outcome was not stored).
  store::BeginDecision decision = store::BeginDecision::kRun;
  store::JobStatus status = store::JobStatus::kRunning;
  int64_t attempt = 0;
  bool ran = false;                  // the processor ran (decision kRun)
  pipelines::PipelineResult result;  // its result, when it ran
  double seconds = 0;                // how long it ran
  // Why kRetryLater when a store or publisher call failed, or the run
  // failed transiently (Unavailable, naming the error); OK otherwise.
  Status error;
};

// The limit on one attempt of a job: the message's `timeout_s` (a positive
// integer, or none) capped by jobs.timeout_s (`config_s`; 0 = no cap).
// Returns 0 seconds when neither sets one. `source` names the one in force.
struct JobTimeoutLimit {
  std::chrono::seconds seconds{0};
  std::string source;  // "jobs.timeout_s" or "the message's timeout_s"
};
JobTimeoutLimit JobTimeout(int64_t config_s, std::optional<int64_t> message_s);

// Runs `request` through the sequence above. `job` is its store record
// (id, pipeline, params, reply_to, source, worker).
// REQUIRES: job.id == request.job_id; `processor` runs job.pipeline.
JobRun RunJob(store::JobStore& store, pipelines::Processor& processor, const store::NewJob& job,
              const pipelines::PipelineRequest& request, const std::atomic<bool>& cancel,
              const RunJobOptions& options);

// The edges between a pipeline's own types and the job's: what a job
// message asks a pipeline to do, and what the store keeps of its output.
pipelines::PipelineRequest ToPipelineRequest(const ingest::JobMessage& message);
store::ResultRecord ToResultRecord(const pipelines::PipelineOutput& output);
std::vector<store::DocumentRecord> ToDocumentRecords(const pipelines::PipelineOutput& output);

// Step 4 alone, for a job already finished in the store (the daemon's
// invalid messages, filed with JobStore::Fail): sends what the store says
// has not gone out. OK means kDone.
Status PublishFinished(store::JobStore& store, const std::string& job_id,
                       ResultPublisher& publisher, const RunJobOptions& options);

}  // namespace ellm::app

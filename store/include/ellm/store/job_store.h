// JobStore: the durable record of every job: one row per job id, at most one
// result per job, and an append-only audit trail of events.
//
// The contract the job consumer relies on for exactly-once results over an
// at-least-once queue:
//   - Begin() is called before any work. A job id already finished
//     (succeeded or failed) is never run again; a job found unfinished (the
//     process died, or a rebalance moved it) is retried until it has been
//     started `max_attempts` times, then failed.
//   - Succeed()/Fail() commit the outcome in one transaction (BEGIN
//     IMMEDIATE; synchronous=FULL), and are idempotent: the first outcome
//     stored wins, later calls change nothing and report so.
//   - The Kafka offset is committed only after Succeed()/Fail() returned OK.
//
// One JobStore per connection and thread; any number of processes may open
// the same file (SQLite WAL: readers never block the one writer at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ellm/base/status.h"
#include "ellm/store/database.h"

namespace ellm::store {

enum class JobStatus { kQueued, kRunning, kSucceeded, kFailed };
// "queued", "running", "succeeded", "failed": the stored text (append-only).
std::string_view JobStatusName(JobStatus s);
StatusOr<JobStatus> ParseJobStatus(std::string_view name);

// Where a job's message came from; partition/offset are -1 for jobs that did
// not come from Kafka (the CLI).
struct JobSource {
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
};

struct NewJob {
  std::string id;
  std::string pipeline;
  std::string params_json = "{}";
  std::optional<std::string> reply_to;
  JobSource source;
  std::string worker;  // who runs it (e.g. "ellmd-host/1234"), for the audit trail
};

// A page of a document that was read by OCR (a scan), and how well.
struct OcrPageRecord {
  int page = 0;        // 1-based
  int confidence = 0;  // mean word confidence, percent
  std::string note;    // "", "low confidence", "no text found", "stopped at ..."
};

struct DocumentRecord {
  int ordinal = 0;
  std::string path;    // as given, or "inline:<name>"
  std::string sha256;  // hex of the bytes read
  int64_t page_count = 0;
  int64_t token_count = 0;
  std::vector<OcrPageRecord> ocr_pages;  // empty: every page read from its text
};

struct ResultRecord {
  std::string output_text;
  std::optional<std::string> output_json;
  std::string model_fingerprint;
  std::string pipeline_name;
  std::string pipeline_version;
  std::string strategy;  // e.g. "single-pass", "map-reduce"
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t prefill_ms = 0;
  int64_t decode_ms = 0;
  int64_t constraint_ms = 0;  // of decode_ms: masks and accepts of a JSON schema
};

struct EventRecord {
  int64_t seq = 0;
  std::string at;
  std::string kind;
  std::string detail;
};

struct JobRecord {
  std::string id;
  std::string pipeline;
  JobStatus status = JobStatus::kQueued;
  int64_t attempts = 0;
  std::string params_json;
  std::optional<std::string> reply_to;
  JobSource source;
  std::string error_code;
  std::string error_message;
  std::string created_at, updated_at, started_at, finished_at;
  std::optional<ResultRecord> result;
  std::vector<DocumentRecord> documents;
  std::vector<EventRecord> events;
};

enum class BeginDecision {
  kRun,          // run it now; `attempt` is this attempt's number (1-based)
  kAlreadyDone,  // finished before: do not run; commit the offset
  kGaveUp,       // started max_attempts times without finishing: now failed
};

struct BeginResult {
  BeginDecision decision = BeginDecision::kRun;
  int64_t attempt = 0;
  JobStatus status = JobStatus::kRunning;  // the status after Begin
};

struct JobStoreOptions {
  // How many times a job may be started before it is failed for good.
  int max_attempts = 3;
  DatabaseOptions database;
};

class JobStore {
 public:
  static StatusOr<std::unique_ptr<JobStore>> Open(const std::string& path,
                                                  const JobStoreOptions& options = {});

  // Marks `job` running (inserting it if new) unless it finished before or
  // has used up its attempts. See the file comment.
  StatusOr<BeginResult> Begin(const NewJob& job);

  // Stores the result and documents and marks the job succeeded. Returns
  // false (and stores nothing) when the job had already finished.
  // REQUIRES: Begin() was called for `job_id`.
  StatusOr<bool> Succeed(const std::string& job_id, const std::vector<DocumentRecord>& documents,
                         const ResultRecord& result);

  // Marks the job failed with a stable `error_code` and a message for people,
  // inserting it first if it is not known (a message too broken to Begin).
  // Returns false when it had already finished (nothing changes).
  StatusOr<bool> Fail(const NewJob& job, const std::string& error_code,
                      const std::string& error_message);

  // A run that was cancelled (SIGTERM, a lost partition) gives its attempt
  // back: the job returns to `queued` with one attempt fewer and a
  // `cancelled` event, only if it is still `running` at `attempt` (a new
  // owner that began the next attempt meanwhile is left alone). Returns
  // whether it changed anything. A process that dies keeps its attempt:
  // that is how a job that crashes the engine is found.
  StatusOr<bool> Release(const std::string& job_id, int64_t attempt, const std::string& why);

  // A run that failed for a reason that may pass (disk full, a failed fork:
  // a transient error) keeps its attempt: the job returns to `queued` with a
  // `transient_error` event carrying `detail`, only if it is still
  // `running` at `attempt`. Returns whether it changed anything.
  StatusOr<bool> Requeue(const std::string& job_id, int64_t attempt, const std::string& detail);

  // JobStoreOptions::max_attempts.
  int max_attempts() const { return options_.max_attempts; }

  // At start-up: jobs left `running` by a process that died go back to
  // `queued` (their message will be delivered again); those that used up
  // their attempts are failed. Returns how many were requeued.
  StatusOr<int> RecoverInterrupted();

  Status AddEvent(const std::string& job_id, const std::string& kind, const std::string& detail);
  StatusOr<bool> HasEvent(const std::string& job_id, const std::string& kind);
  StatusOr<int64_t> CountEvents(const std::string& job_id, const std::string& kind);

  // A finished job whose events could not be delivered: status failed with
  // error_code publish_failed and `error_message`, its result (if any)
  // kept, and a `publish_failed` event, in one transaction.
  Status MarkPublishFailed(const std::string& job_id, const std::string& error_message);

  // Jobs with no queue behind them (the HTTP API). Enqueue records `job`
  // as queued with its whole `message` in the inbox, in one transaction;
  // false (nothing changes) when a job of that id exists already. Inbox()
  // gives the messages of jobs not finished yet, oldest first (after a
  // restart: what to run again); RemoveFromInbox drops one once its job
  // has finished.
  StatusOr<bool> Enqueue(const NewJob& job, std::string_view message);
  StatusOr<std::vector<std::pair<std::string, std::string>>> Inbox();
  Status RemoveFromInbox(const std::string& job_id);

  // Deletes finished jobs (succeeded or failed) that finished more than
  // `days` days ago, with their documents, results and events. Returns how
  // many. Jobs queued or running are never pruned.
  StatusOr<int64_t> Prune(int days);

  // Newest first; `status` filters when set, and `id_prefix` (when not
  // empty) keeps the jobs whose ids start with it.
  StatusOr<std::vector<JobRecord>> List(std::optional<JobStatus> status, int limit = 100,
                                        std::string_view id_prefix = {});
  // With result, documents and events; nullopt when unknown.
  StatusOr<std::optional<JobRecord>> Get(const std::string& job_id);

  Database& database() { return *db_; }

 private:
  JobStore(std::unique_ptr<Database> db, JobStoreOptions options)
      : db_(std::move(db)), options_(options) {}
  Status InTransaction(const std::function<Status()>& body);

  std::unique_ptr<Database> db_;
  JobStoreOptions options_;
};

}  // namespace ellm::store

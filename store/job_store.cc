#include "ellm/store/job_store.h"

#include <string_view>

#include "ellm/store/job_json.h"
#include "statement.h"

namespace ellm::store {
namespace {

constexpr const char* kNow = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

std::string Sql(std::string text) {
  // Lets statements say NOW instead of repeating the timestamp expression.
  for (size_t at = text.find("NOW"); at != std::string::npos; at = text.find("NOW", at)) {
    text.replace(at, 3, kNow);
  }
  return text;
}

Status InsertEvent(Database& db, const std::string& job_id, std::string_view kind,
                   std::string_view detail) {
  ELLM_ASSIGN_OR_RETURN(auto st, Statement::Prepare(db,
                                                    "INSERT INTO events(job_id, kind, detail) "
                                                    "VALUES (?1, ?2, ?3)"));
  st.Bind(1, std::string_view(job_id)).Bind(2, kind).Bind(3, detail);
  return st.Run();
}

// Inserts `job` as its first attempt with `status` (running or failed; a
// failed one is finished at once and carries the error).
Status InsertJob(Database& db, const NewJob& job, JobStatus status, const std::string* error_code,
                 const std::string* error_message) {
  bool failed = status == JobStatus::kFailed;
  ELLM_ASSIGN_OR_RETURN(
      auto ins,
      Statement::Prepare(db, Sql("INSERT INTO jobs(id, pipeline, status, attempts, params_json, "
                                 "reply_to, source_topic, source_partition, source_offset, "
                                 "error_code, error_message, started_at, finished_at) VALUES "
                                 "(?1, ?2, ?8, 1, ?3, ?4, ?5, ?6, ?7, ?9, ?10, NOW, " +
                                 std::string(failed ? "NOW" : "NULL") + ")")));
  std::optional<std::string> code, message;
  if (error_code) code = *error_code;
  if (error_message) message = *error_message;
  ins.Bind(1, std::string_view(job.id))
      .Bind(2, std::string_view(job.pipeline))
      .Bind(3, std::string_view(job.params_json))
      .Bind(4, job.reply_to)
      .Bind(5, std::string_view(job.source.topic))
      .Bind(6, int64_t{job.source.partition})
      .Bind(7, job.source.offset)
      .Bind(8, JobStatusName(status))
      .Bind(9, code)
      .Bind(10, message);
  return ins.Run();
}

struct Row {
  JobStatus status;
  int64_t attempts;
};

StatusOr<std::optional<Row>> ReadRow(Database& db, const std::string& id) {
  ELLM_ASSIGN_OR_RETURN(auto st,
                        Statement::Prepare(db, "SELECT status, attempts FROM jobs WHERE id = ?1"));
  st.Bind(1, std::string_view(id));
  ELLM_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<Row>();
  ELLM_ASSIGN_OR_RETURN(JobStatus status, ParseJobStatus(st.Text(0)));
  return std::optional<Row>(Row{status, st.Int(1)});
}

bool Finished(JobStatus s) { return s == JobStatus::kSucceeded || s == JobStatus::kFailed; }

constexpr const char* kJobColumns =
    "id, pipeline, status, attempts, params_json, reply_to, source_topic, source_partition, "
    "source_offset, error_code, error_message, created_at, updated_at, started_at, finished_at";

StatusOr<JobRecord> ReadJob(const Statement& st) {
  JobRecord j;
  j.id = st.Text(0);
  j.pipeline = st.Text(1);
  ELLM_ASSIGN_OR_RETURN(j.status, ParseJobStatus(st.Text(2)));
  j.attempts = st.Int(3);
  j.params_json = st.Text(4);
  if (!st.IsNull(5)) j.reply_to = st.Text(5);
  j.source.topic = st.Text(6);
  j.source.partition = st.IsNull(7) ? -1 : static_cast<int32_t>(st.Int(7));
  j.source.offset = st.IsNull(8) ? -1 : st.Int(8);
  j.error_code = st.Text(9);
  j.error_message = st.Text(10);
  j.created_at = st.Text(11);
  j.updated_at = st.Text(12);
  j.started_at = st.Text(13);
  j.finished_at = st.Text(14);
  return j;
}

}  // namespace

std::string_view JobStatusName(JobStatus s) {
  switch (s) {
    case JobStatus::kQueued:
      return "queued";
    case JobStatus::kRunning:
      return "running";
    case JobStatus::kSucceeded:
      return "succeeded";
    case JobStatus::kFailed:
      return "failed";
  }
  return "unknown";
}

StatusOr<JobStatus> ParseJobStatus(std::string_view name) {
  for (JobStatus s :
       {JobStatus::kQueued, JobStatus::kRunning, JobStatus::kSucceeded, JobStatus::kFailed}) {
    if (JobStatusName(s) == name) return s;
  }
  return InvalidArgumentError("unknown job status '" + std::string(name) +
                              "' (expected queued, running, succeeded or failed)");
}

StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path,
                                                   const JobStoreOptions& options) {
  if (options.max_attempts < 1) {
    return InvalidArgumentError("job store: max_attempts must be at least 1");
  }
  ELLM_ASSIGN_OR_RETURN(auto db, Database::Open(path, options.database));
  return std::unique_ptr<JobStore>(new JobStore(std::move(db), options));
}

Status JobStore::InTransaction(const std::function<Status()>& body) {
  // IMMEDIATE takes the write lock up front, so a busy database shows up
  // here (after busy_timeout) and never as a failed COMMIT half-way.
  ELLM_RETURN_IF_ERROR(db_->Exec("BEGIN IMMEDIATE"));
  Status st = body();
  if (st.ok()) st = db_->Exec("COMMIT");
  if (!st.ok()) (void)db_->Exec("ROLLBACK");
  return st;
}

StatusOr<BeginResult> JobStore::Begin(const NewJob& job) {
  BeginResult out;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(auto row, ReadRow(*db_, job.id));
    if (row && Finished(row->status)) {
      out = {BeginDecision::kAlreadyDone, row->attempts, row->status};
      return InsertEvent(*db_, job.id, "duplicate",
                         "delivered again after it had " + std::string(JobStatusName(row->status)) +
                             "; not run again");
    }
    if (row && row->attempts >= options_.max_attempts) {
      std::string msg = "the job was started " + std::to_string(row->attempts) +
                        " times without finishing (the process died or lost the job each "
                        "time); giving up";
      ELLM_ASSIGN_OR_RETURN(auto up,
                            Statement::Prepare(*db_, Sql("UPDATE jobs SET status='failed', "
                                                         "error_code='attempts_exhausted', "
                                                         "error_message=?2, updated_at=NOW, "
                                                         "finished_at=NOW WHERE id=?1")));
      up.Bind(1, std::string_view(job.id)).Bind(2, std::string_view(msg));
      ELLM_RETURN_IF_ERROR(up.Run());
      out = {BeginDecision::kGaveUp, row->attempts, JobStatus::kFailed};
      return InsertEvent(*db_, job.id, "failed", msg);
    }
    if (!row) {
      ELLM_RETURN_IF_ERROR(InsertJob(*db_, job, JobStatus::kRunning, nullptr, nullptr));
      out = {BeginDecision::kRun, 1, JobStatus::kRunning};
    } else {
      ELLM_ASSIGN_OR_RETURN(
          auto up, Statement::Prepare(*db_, Sql("UPDATE jobs SET status='running', "
                                                "attempts=attempts+1, source_topic=?2, "
                                                "source_partition=?3, source_offset=?4, "
                                                "updated_at=NOW, started_at=NOW WHERE id=?1")));
      up.Bind(1, std::string_view(job.id))
          .Bind(2, std::string_view(job.source.topic))
          .Bind(3, int64_t{job.source.partition})
          .Bind(4, job.source.offset);
      ELLM_RETURN_IF_ERROR(up.Run());
      out = {BeginDecision::kRun, row->attempts + 1, JobStatus::kRunning};
    }
    return InsertEvent(
        *db_, job.id, "started",
        "attempt " + std::to_string(out.attempt) + (job.worker.empty() ? "" : " by " + job.worker));
  });
  if (!st.ok()) return st.WithContext("job '" + job.id + "': cannot record its start");
  return out;
}

StatusOr<bool> JobStore::Succeed(const std::string& job_id,
                                 const std::vector<DocumentRecord>& documents,
                                 const ResultRecord& r) {
  bool stored = false;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(auto row, ReadRow(*db_, job_id));
    if (!row) return NotFoundError("no such job (Begin was not called)");
    if (Finished(row->status)) return OkStatus();
    for (const DocumentRecord& d : documents) {
      ELLM_ASSIGN_OR_RETURN(
          auto ins, Statement::Prepare(*db_,
                                       "INSERT OR REPLACE INTO documents(job_id, ordinal, path, "
                                       "sha256, page_count, token_count, ocr_pages) VALUES "
                                       "(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
      ins.Bind(1, std::string_view(job_id))
          .Bind(2, int64_t{d.ordinal})
          .Bind(3, std::string_view(d.path))
          .Bind(4, std::string_view(d.sha256))
          .Bind(5, d.page_count)
          .Bind(6, d.token_count)
          .Bind(7, OcrPagesColumn(d.ocr_pages));
      ELLM_RETURN_IF_ERROR(ins.Run());
    }
    ELLM_ASSIGN_OR_RETURN(
        auto res,
        Statement::Prepare(*db_,
                           "INSERT INTO results(job_id, output_text, output_json, "
                           "model_fingerprint, pipeline_name, pipeline_version, prompt_tokens, "
                           "generated_tokens, prefill_ms, decode_ms, strategy, constraint_ms) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
    res.Bind(1, std::string_view(job_id))
        .Bind(2, std::string_view(r.output_text))
        .Bind(3, r.output_json)
        .Bind(4, std::string_view(r.model_fingerprint))
        .Bind(5, std::string_view(r.pipeline_name))
        .Bind(6, std::string_view(r.pipeline_version))
        .Bind(7, r.prompt_tokens)
        .Bind(8, r.generated_tokens)
        .Bind(9, r.prefill_ms)
        .Bind(10, r.decode_ms)
        .Bind(11, std::string_view(r.strategy))
        .Bind(12, r.constraint_ms);
    ELLM_RETURN_IF_ERROR(res.Run());
    ELLM_ASSIGN_OR_RETURN(auto up, Statement::Prepare(*db_, Sql("UPDATE jobs SET "
                                                                "status='succeeded', "
                                                                "error_code=NULL, "
                                                                "error_message=NULL, "
                                                                "updated_at=NOW, finished_at=NOW "
                                                                "WHERE id=?1")));
    up.Bind(1, std::string_view(job_id));
    ELLM_RETURN_IF_ERROR(up.Run());
    stored = true;
    return InsertEvent(*db_, job_id, "succeeded",
                       std::to_string(r.generated_tokens) + " tokens generated");
  });
  if (!st.ok()) return st.WithContext("job '" + job_id + "': cannot store its result");
  return stored;
}

StatusOr<bool> JobStore::Fail(const NewJob& job, const std::string& error_code,
                              const std::string& error_message) {
  bool stored = false;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(auto row, ReadRow(*db_, job.id));
    if (row && Finished(row->status)) return OkStatus();
    if (!row) {
      ELLM_RETURN_IF_ERROR(InsertJob(*db_, job, JobStatus::kFailed, &error_code, &error_message));
    } else {
      ELLM_ASSIGN_OR_RETURN(
          auto up, Statement::Prepare(*db_, Sql("UPDATE jobs SET status='failed', "
                                                "error_code=?2, error_message=?3, "
                                                "updated_at=NOW, finished_at=NOW WHERE id=?1")));
      up.Bind(1, std::string_view(job.id))
          .Bind(2, std::string_view(error_code))
          .Bind(3, std::string_view(error_message));
      ELLM_RETURN_IF_ERROR(up.Run());
    }
    stored = true;
    return InsertEvent(*db_, job.id, "failed", error_code + ": " + error_message);
  });
  if (!st.ok()) return st.WithContext("job '" + job.id + "': cannot store its failure");
  return stored;
}

StatusOr<bool> JobStore::Release(const std::string& job_id, int64_t attempt,
                                 const std::string& why) {
  bool released = false;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(
        auto up, Statement::Prepare(*db_, Sql("UPDATE jobs SET status='queued', "
                                              "attempts=attempts-1, updated_at=NOW WHERE id=?1 "
                                              "AND status='running' AND attempts=?2")));
    up.Bind(1, std::string_view(job_id)).Bind(2, attempt);
    ELLM_RETURN_IF_ERROR(up.Run());
    released = sqlite3_changes(db_->handle()) > 0;
    if (!released) return OkStatus();
    return InsertEvent(*db_, job_id, "cancelled",
                       "attempt " + std::to_string(attempt) + " " + why + "; it does not count");
  });
  if (!st.ok()) return st.WithContext("job '" + job_id + "': cannot give its attempt back");
  return released;
}

StatusOr<bool> JobStore::Requeue(const std::string& job_id, int64_t attempt,
                                 const std::string& detail) {
  bool requeued = false;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(
        auto up, Statement::Prepare(*db_, Sql("UPDATE jobs SET status='queued', updated_at=NOW "
                                              "WHERE id=?1 AND status='running' AND attempts=?2")));
    up.Bind(1, std::string_view(job_id)).Bind(2, attempt);
    ELLM_RETURN_IF_ERROR(up.Run());
    requeued = sqlite3_changes(db_->handle()) > 0;
    if (!requeued) return OkStatus();
    return InsertEvent(*db_, job_id, "transient_error",
                       "attempt " + std::to_string(attempt) + ": " + detail);
  });
  if (!st.ok()) return st.WithContext("job '" + job_id + "': cannot queue it again");
  return requeued;
}

StatusOr<int64_t> JobStore::Prune(int days) {
  int64_t pruned = 0;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(
        auto del, Statement::Prepare(*db_,
                                     "DELETE FROM jobs WHERE status IN ('succeeded', 'failed') AND "
                                     "coalesce(finished_at, updated_at) < "
                                     "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1)"));
    const std::string modifier = "-" + std::to_string(days) + " days";
    del.Bind(1, std::string_view(modifier));
    ELLM_RETURN_IF_ERROR(del.Run());
    pruned = sqlite3_changes(db_->handle());
    return OkStatus();
  });
  if (!st.ok()) return st.WithContext("pruning jobs older than " + std::to_string(days) + " days");
  return pruned;
}

StatusOr<bool> JobStore::Enqueue(const NewJob& job, std::string_view message) {
  bool added = false;
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(auto row, ReadRow(*db_, job.id));
    if (row) return OkStatus();
    ELLM_ASSIGN_OR_RETURN(auto ins,
                          Statement::Prepare(*db_,
                                             "INSERT INTO jobs(id, pipeline, status, attempts, "
                                             "params_json, reply_to, source_topic, "
                                             "source_partition, source_offset) VALUES "
                                             "(?1, ?2, 'queued', 0, ?3, ?4, ?5, ?6, ?7)"));
    ins.Bind(1, std::string_view(job.id))
        .Bind(2, std::string_view(job.pipeline))
        .Bind(3, std::string_view(job.params_json))
        .Bind(4, job.reply_to)
        .Bind(5, std::string_view(job.source.topic))
        .Bind(6, int64_t{job.source.partition})
        .Bind(7, job.source.offset);
    ELLM_RETURN_IF_ERROR(ins.Run());
    ELLM_ASSIGN_OR_RETURN(
        auto box, Statement::Prepare(*db_, "INSERT INTO inbox(job_id, message) VALUES (?1, ?2)"));
    box.Bind(1, std::string_view(job.id)).Bind(2, message);
    ELLM_RETURN_IF_ERROR(box.Run());
    added = true;
    return InsertEvent(*db_, job.id, "queued", job.worker.empty() ? "" : "by " + job.worker);
  });
  if (!st.ok()) return st.WithContext("job '" + job.id + "': cannot queue it");
  return added;
}

StatusOr<std::vector<std::pair<std::string, std::string>>> JobStore::Inbox() {
  ELLM_ASSIGN_OR_RETURN(
      auto q, Statement::Prepare(*db_,
                                 "SELECT inbox.job_id, inbox.message FROM inbox JOIN jobs "
                                 "ON jobs.id = inbox.job_id WHERE jobs.status IN "
                                 "('queued', 'running') ORDER BY inbox.received_at, "
                                 "inbox.rowid"));
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    ELLM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out.emplace_back(q.Text(0), q.Text(1));
  }
  return out;
}

Status JobStore::RemoveFromInbox(const std::string& job_id) {
  ELLM_ASSIGN_OR_RETURN(auto del, Statement::Prepare(*db_, "DELETE FROM inbox WHERE job_id = ?1"));
  del.Bind(1, std::string_view(job_id));
  return del.Run();
}

StatusOr<int> JobStore::RecoverInterrupted() {
  int requeued = 0;
  Status st = InTransaction([&]() -> Status {
    std::vector<std::pair<std::string, int64_t>> running;
    {
      ELLM_ASSIGN_OR_RETURN(
          auto q, Statement::Prepare(*db_, "SELECT id, attempts FROM jobs WHERE status='running'"));
      for (;;) {
        ELLM_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        running.emplace_back(q.Text(0), q.Int(1));
      }
    }
    for (const auto& [id, attempts] : running) {
      bool give_up = attempts >= options_.max_attempts;
      std::string msg = "the process running attempt " + std::to_string(attempts) + " stopped";
      ELLM_ASSIGN_OR_RETURN(
          auto up,
          Statement::Prepare(
              *db_, Sql(give_up ? "UPDATE jobs SET status='failed', "
                                  "error_code='attempts_exhausted', error_message=?2, "
                                  "updated_at=NOW, finished_at=NOW WHERE id=?1"
                                : "UPDATE jobs SET status='queued', updated_at=NOW WHERE id=?1")));
      up.Bind(1, std::string_view(id));
      if (give_up) up.Bind(2, std::string_view(msg + "; out of attempts, giving up"));
      ELLM_RETURN_IF_ERROR(up.Run());
      ELLM_RETURN_IF_ERROR(InsertEvent(*db_, id, give_up ? "failed" : "interrupted",
                                       give_up ? msg + "; out of attempts" : msg));
      if (!give_up) ++requeued;
    }
    return OkStatus();
  });
  if (!st.ok()) return st.WithContext("recovering interrupted jobs");
  return requeued;
}

Status JobStore::AddEvent(const std::string& job_id, const std::string& kind,
                          const std::string& detail) {
  return InsertEvent(*db_, job_id, kind, detail);
}

StatusOr<bool> JobStore::HasEvent(const std::string& job_id, const std::string& kind) {
  ELLM_ASSIGN_OR_RETURN(
      auto q, Statement::Prepare(*db_, "SELECT 1 FROM events WHERE job_id=?1 AND kind=?2 LIMIT 1"));
  q.Bind(1, std::string_view(job_id)).Bind(2, std::string_view(kind));
  return q.Step();
}

StatusOr<int64_t> JobStore::CountEvents(const std::string& job_id, const std::string& kind) {
  ELLM_ASSIGN_OR_RETURN(
      auto q, Statement::Prepare(*db_, "SELECT COUNT(*) FROM events WHERE job_id=?1 AND kind=?2"));
  q.Bind(1, std::string_view(job_id)).Bind(2, std::string_view(kind));
  ELLM_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

Status JobStore::MarkPublishFailed(const std::string& job_id, const std::string& error_message) {
  Status st = InTransaction([&]() -> Status {
    ELLM_ASSIGN_OR_RETURN(
        auto up, Statement::Prepare(*db_, Sql("UPDATE jobs SET status='failed', "
                                              "error_code='publish_failed', error_message=?2, "
                                              "updated_at=NOW WHERE id=?1")));
    up.Bind(1, std::string_view(job_id)).Bind(2, std::string_view(error_message));
    ELLM_RETURN_IF_ERROR(up.Run());
    return InsertEvent(*db_, job_id, "publish_failed", error_message);
  });
  return st.WithContext("job '" + job_id + "': cannot store that its events were not delivered");
}

StatusOr<std::vector<JobRecord>> JobStore::List(std::optional<JobStatus> status, int limit,
                                                std::string_view id_prefix) {
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE " +
                    (status ? "status=?1" : "1") +
                    (id_prefix.empty() ? "" : " AND substr(id, 1, ?3)=?2") +
                    " ORDER BY created_at DESC, rowid DESC LIMIT " + std::to_string(limit);
  ELLM_ASSIGN_OR_RETURN(auto q, Statement::Prepare(*db_, sql));
  if (status) q.Bind(1, JobStatusName(*status));
  if (!id_prefix.empty()) {
    q.Bind(2, id_prefix);
    q.Bind(3, static_cast<int64_t>(id_prefix.size()));
  }
  std::vector<JobRecord> out;
  for (;;) {
    ELLM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    ELLM_ASSIGN_OR_RETURN(JobRecord j, ReadJob(q));
    out.push_back(std::move(j));
  }
  return out;
}

StatusOr<std::optional<JobRecord>> JobStore::Get(const std::string& job_id) {
  ELLM_ASSIGN_OR_RETURN(auto q, Statement::Prepare(*db_, std::string("SELECT ") + kJobColumns +
                                                             " FROM jobs WHERE id=?1"));
  q.Bind(1, std::string_view(job_id));
  ELLM_ASSIGN_OR_RETURN(bool found, q.Step());
  if (!found) return std::optional<JobRecord>();
  ELLM_ASSIGN_OR_RETURN(JobRecord j, ReadJob(q));

  ELLM_ASSIGN_OR_RETURN(
      auto r,
      Statement::Prepare(*db_,
                         "SELECT output_text, output_json, model_fingerprint, "
                         "pipeline_name, pipeline_version, strategy, prompt_tokens, "
                         "generated_tokens, prefill_ms, decode_ms, constraint_ms FROM results "
                         "WHERE job_id=?1"));
  r.Bind(1, std::string_view(job_id));
  ELLM_ASSIGN_OR_RETURN(bool has_result, r.Step());
  if (has_result) {
    ResultRecord res;
    res.output_text = r.Text(0);
    if (!r.IsNull(1)) res.output_json = r.Text(1);
    res.model_fingerprint = r.Text(2);
    res.pipeline_name = r.Text(3);
    res.pipeline_version = r.Text(4);
    res.strategy = r.Text(5);
    res.prompt_tokens = r.Int(6);
    res.generated_tokens = r.Int(7);
    res.prefill_ms = r.Int(8);
    res.decode_ms = r.Int(9);
    res.constraint_ms = r.Int(10);
    j.result = std::move(res);
  }

  ELLM_ASSIGN_OR_RETURN(auto d,
                        Statement::Prepare(*db_,
                                           "SELECT ordinal, path, sha256, page_count, token_count, "
                                           "ocr_pages FROM "
                                           "documents WHERE job_id=?1 ORDER BY ordinal"));
  d.Bind(1, std::string_view(job_id));
  for (;;) {
    ELLM_ASSIGN_OR_RETURN(bool row, d.Step());
    if (!row) break;
    j.documents.push_back({static_cast<int>(d.Int(0)), d.Text(1), d.Text(2), d.Int(3), d.Int(4),
                           OcrPagesFromColumn(d.Text(5))});
  }

  ELLM_ASSIGN_OR_RETURN(auto e, Statement::Prepare(*db_,
                                                   "SELECT seq, at, kind, detail FROM events "
                                                   "WHERE job_id=?1 ORDER BY seq"));
  e.Bind(1, std::string_view(job_id));
  for (;;) {
    ELLM_ASSIGN_OR_RETURN(bool row, e.Step());
    if (!row) break;
    j.events.push_back({e.Int(0), e.Text(1), e.Text(2), e.Text(3)});
  }
  return std::optional<JobRecord>(std::move(j));
}

}  // namespace ellm::store

#include "ellm/store/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

namespace ellm::store {
namespace {

// Schema migrations: entry i takes user_version i to i+1. Append-only: a
// released migration is never edited, only followed by a new one.
const std::vector<std::string_view>& Migrations() {
  static const std::vector<std::string_view> kMigrations = {
      // 1: jobs, their documents and results, and an audit trail.
      R"sql(
CREATE TABLE jobs (
  id            TEXT PRIMARY KEY,
  pipeline      TEXT NOT NULL,
  status        TEXT NOT NULL CHECK (status IN ('queued','running','succeeded','failed')),
  attempts      INTEGER NOT NULL DEFAULT 0,
  params_json   TEXT,
  source_topic  TEXT,
  source_partition INTEGER,
  source_offset INTEGER,
  error_code    TEXT,
  error_message TEXT,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX jobs_by_status ON jobs(status);
CREATE TABLE documents (
  job_id       TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  ordinal      INTEGER NOT NULL,
  path         TEXT,
  sha256       TEXT,
  page_count   INTEGER,
  token_count  INTEGER,
  PRIMARY KEY (job_id, ordinal)
);
CREATE TABLE results (
  job_id            TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  output_text       TEXT,
  output_json       TEXT,
  model_fingerprint TEXT NOT NULL,
  pipeline_name     TEXT NOT NULL,
  pipeline_version  TEXT NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  generated_tokens  INTEGER NOT NULL,
  prefill_ms        INTEGER NOT NULL,
  decode_ms         INTEGER NOT NULL,
  created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE TABLE events (
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id   TEXT REFERENCES jobs(id) ON DELETE CASCADE,
  at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  kind     TEXT NOT NULL,
  detail   TEXT
);
)sql",
      // 2: what the job consumer and pipelines record: where to reply, when
      // each attempt started and ended, and which strategy produced a result.
      R"sql(
ALTER TABLE jobs ADD COLUMN reply_to TEXT;
ALTER TABLE jobs ADD COLUMN started_at TEXT;
ALTER TABLE jobs ADD COLUMN finished_at TEXT;
ALTER TABLE results ADD COLUMN strategy TEXT;
CREATE INDEX events_by_job ON events(job_id, kind);
)sql",
      // 3: the time grammar-constrained decoding took of a result's decode.
      R"sql(
ALTER TABLE results ADD COLUMN constraint_ms INTEGER NOT NULL DEFAULT 0;
)sql",
      // 4: jobs that came without a queue behind them (the HTTP API) keep
      // their whole message here until they finish, so that a restart runs
      // them again instead of losing them.
      R"sql(
CREATE TABLE inbox (
  job_id      TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  message     BLOB NOT NULL,
  received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
)sql",
      // 5: which pages of a document were read by OCR, and how well: a JSON
      // array of {"page", "confidence", "note"}; NULL when none were.
      R"sql(
ALTER TABLE documents ADD COLUMN ocr_pages TEXT;
)sql",
  };
  return kMigrations;
}

}  // namespace

int Database::SchemaVersion() { return static_cast<int>(Migrations().size()); }

Status SqliteStatus(int rc, std::string message) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(std::move(message));
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return ResourceExhaustedError(std::move(message));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_IOERR:
      return DataLossError(std::move(message));
    case SQLITE_CONSTRAINT:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return FailedPreconditionError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

Status Database::Error(int rc, const std::string& what) const {
  return SqliteStatus(rc, "SQLite database '" + path_ + "': " + what + ": " +
                              (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
}

StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                   const DatabaseOptions& options) {
  sqlite3* raw = nullptr;
  int flags =
      options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(raw, path));
  if (rc != SQLITE_OK) return db->Error(rc, "cannot open");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);

  // Reading the header first turns "not a database" into a clear error.
  auto app = db->QueryInt("PRAGMA application_id");
  if (!app.ok()) return app.status();
  auto version = db->QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*app != 0 && *app != kApplicationId) {
    return FailedPreconditionError(
        "SQLite database '" + path + "' belongs to another application (application_id " +
        std::to_string(*app) + "); refusing to use it as the ellm store");
  }
  if (*version > SchemaVersion()) {
    return FailedPreconditionError("SQLite database '" + path + "' has schema version " +
                                   std::to_string(*version) + ", newer than this ellm's " +
                                   std::to_string(SchemaVersion()) + "; upgrade ellm");
  }
  if (options.read_only) {
    ELLM_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON"));
    return db;
  }
  // WAL: readers never block the writer. synchronous=FULL: a COMMIT has
  // reached the disk before it returns, which the Kafka offset commit relies on.
  // Switching to WAL upgrades a read lock to an exclusive one, and SQLite
  // answers BUSY at once, without the busy handler (deadlock avoidance),
  // while another connection holds the write lock: a second daemon on the
  // same store creating or migrating it at the same moment. Retried for
  // up to busy_timeout_ms, as any other wait for the lock.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
  auto mode = db->QueryText("PRAGMA journal_mode=WAL");
  while (!mode.ok() && mode.status().code() == StatusCode::kUnavailable &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    mode = db->QueryText("PRAGMA journal_mode=WAL");
  }
  if (!mode.ok()) return mode.status();
  if (*mode != "wal") {
    return FailedPreconditionError("SQLite database '" + path + "' cannot use WAL mode (got '" +
                                   *mode + "'); is it on a network file system?");
  }
  ELLM_RETURN_IF_ERROR(
      db->Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
               "PRAGMA wal_autocheckpoint=" +
               std::to_string(options.wal_autocheckpoint_pages)));
  ELLM_RETURN_IF_ERROR(db->Migrate());
  return db;
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Status Database::Migrate() {
  ELLM_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto version = QueryInt("PRAGMA user_version");
  Status st = version.status();
  for (int v = version.ok() ? static_cast<int>(*version) : SchemaVersion();
       st.ok() && v < SchemaVersion(); ++v) {
    st = Exec(std::string(Migrations()[v]));
    if (st.ok()) st = Exec("PRAGMA user_version=" + std::to_string(v + 1));
    if (!st.ok()) st = st.WithContext("migration to schema version " + std::to_string(v + 1));
  }
  if (st.ok()) st = Exec("PRAGMA application_id=" + std::to_string(kApplicationId));
  if (!st.ok()) {
    (void)Exec("ROLLBACK");
    return st;
  }
  return Exec("COMMIT");
}

Status Database::ProbeWrite() {
  ELLM_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  // Setting a header field marks page 1 dirty even when the value is the
  // same, so the commit appends a frame to the WAL and syncs it.
  Status st = Exec("PRAGMA application_id=" + std::to_string(kApplicationId));
  if (st.ok()) st = Exec("COMMIT");
  if (!st.ok()) (void)Exec("ROLLBACK");
  return st;
}

Status Database::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return Error(rc, "statement failed (" + msg + ")");
  }
  return OkStatus();
}

StatusOr<int64_t> Database::QueryInt(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "cannot prepare '" + sql + "'");
  rc = sqlite3_step(stmt);
  int64_t value = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error(rc, "'" + sql + "' failed");
  return value;
}

StatusOr<std::string> Database::QueryText(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "cannot prepare '" + sql + "'");
  rc = sqlite3_step(stmt);
  std::string value;
  if (rc == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    if (t) value = reinterpret_cast<const char*>(t);
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error(rc, "'" + sql + "' failed");
  return value;
}

Status Database::BackupTo(const std::string& path) {
  const std::string tmp = path + ".partial";
  ::unlink(tmp.c_str());
  // The copy is created here, 0600 from the start, and never through a
  // link: O_EXCL | O_NOFOLLOW refuses a file or link planted after the
  // unlink, SQLITE_OPEN_NOFOLLOW one swapped in after this open. The rename
  // at the end replaces a link at `path` instead of following it.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return InternalError("backup to '" + path + "': cannot create '" + tmp +
                         "': " + std::strerror(errno));
  }
  ::close(fd);
  sqlite3* out = nullptr;
  int rc =
      sqlite3_open_v2(tmp.c_str(), &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
  auto fail = [&](const std::string& why) {
    if (out != nullptr) sqlite3_close(out);
    ::unlink(tmp.c_str());
    return InternalError("backup to '" + path + "': " + why);
  };
  if (rc != SQLITE_OK) return fail(out ? sqlite3_errmsg(out) : sqlite3_errstr(rc));
  sqlite3_backup* b = sqlite3_backup_init(out, "main", db_, "main");
  if (b == nullptr) return fail(sqlite3_errmsg(out));
  // In one step: one read transaction, so the copy is one snapshot. The
  // store is in WAL mode, where a reader holds off no writer; copied in
  // steps instead, every write by the daemon (its health probe writes every
  // 10 s) would restart a copy that takes longer than that.
  do {
    rc = sqlite3_backup_step(b, -1);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(20);
  } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return fail(sqlite3_errstr(rc));
  if (sqlite3_close(out) != SQLITE_OK) {
    out = nullptr;
    return fail("cannot close the copy");
  }
  out = nullptr;
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(std::strerror(errno));
  return OkStatus();
}

}  // namespace ellm::store

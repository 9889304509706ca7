// Database: the SQLite file that holds jobs and results, opened with the
// settings durability needs (WAL, synchronous=FULL so a committed result
// survives power loss, foreign keys, busy timeout) and migrated to the
// current schema (PRAGMA user_version, application_id 'ELLM').
//
// One Database per connection; not thread-safe (SQLite's serialized mode is
// not relied on). The daemon has one writer connection and separate readers.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>

#include "ellm/base/status.h"

namespace ellm::store {

// A Status for SQLite result code `rc` with `message`: busy/locked ->
// Unavailable, full/nomem -> ResourceExhausted, corrupt/notadb/ioerr ->
// DataLoss, constraint/readonly/perm/cantopen -> FailedPrecondition, else
// Internal.
Status SqliteStatus(int rc, std::string message);

// 'ELLM' as a big-endian int32, so `file` and sqlite3_analyzer recognise it.
constexpr int32_t kApplicationId = 0x454C4C4D;

struct DatabaseOptions {
  int busy_timeout_ms = 5000;
  bool read_only = false;
  // Pages after which a WAL checkpoint runs automatically (bounds WAL growth).
  int wal_autocheckpoint_pages = 1000;
};

class Database {
 public:
  // Opens or creates `path` and migrates it to SchemaVersion(). Refuses a
  // file that belongs to another application or was written by a newer ellm.
  static StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                  const DatabaseOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // The schema version this build migrates to.
  static int SchemaVersion();

  // Runs one or more statements that return no rows.
  Status Exec(const std::string& sql);
  // Reads a single integer (first column of the first row).
  StatusOr<int64_t> QueryInt(const std::string& sql);
  StatusOr<std::string> QueryText(const std::string& sql);

  // An online copy of the whole database to `path` (SQLite's backup API:
  // consistent while others write; the file is written beside, then renamed
  // over `path`, mode 0600). Errors name the file.
  Status BackupTo(const std::string& path);

  // Whether the file can be written now, for a health probe: takes the
  // write lock (waiting up to busy_timeout_ms) and commits a rewrite of the
  // header's application id with its own value, so a real write and fsync
  // go through the WAL while nothing the store holds changes. Unavailable
  // while another connection holds the lock; ResourceExhausted (disk full),
  // FailedPrecondition (read-only, permissions) or DataLoss (I/O error) as
  // SqliteStatus maps them.
  Status ProbeWrite();

  sqlite3* handle() { return db_; }
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Error(int rc, const std::string& what) const;
  Status Migrate();

  sqlite3* db_;
  std::string path_;
};

}  // namespace ellm::store

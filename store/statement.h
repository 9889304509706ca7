// Statement: one prepared SQLite statement with typed binds and column reads,
// finalized on destruction. Internal to store/; errors carry the database
// path and the SQL that failed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ellm/base/status.h"
#include "ellm/store/database.h"

namespace ellm::store {

class Statement {
 public:
  static StatusOr<Statement> Prepare(Database& db, std::string_view sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite. An empty optional binds NULL.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, std::string_view value);
  Statement& Bind(int index, const std::optional<std::string>& value);

  // Advances one row: true when a row is available, false when done.
  StatusOr<bool> Step();
  // Steps a statement that returns no rows.
  Status Run();

  int64_t Int(int column) const;
  std::string Text(int column) const;  // "" for NULL
  bool IsNull(int column) const;

 private:
  Statement(Database* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Status Error(int rc) const;

  Database* db_;
  sqlite3_stmt* stmt_;
};

}  // namespace ellm::store

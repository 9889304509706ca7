#include "statement.h"

namespace ellm::store {

StatusOr<Statement> Statement::Prepare(Database& db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc =
      sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  Statement s(&db, stmt);
  if (rc != SQLITE_OK) return s.Error(rc);
  return s;
}

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::Bind(int index, const std::optional<std::string>& value) {
  if (!value) {
    sqlite3_bind_null(stmt_, index);
    return *this;
  }
  return Bind(index, std::string_view(*value));
}

StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error(rc);
}

Status Statement::Run() {
  for (;;) {
    ELLM_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return OkStatus();
  }
}

int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string Statement::Text(int column) const {
  const unsigned char* t = sqlite3_column_text(stmt_, column);
  if (!t) return std::string();
  return std::string(reinterpret_cast<const char*>(t),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

Status Statement::Error(int rc) const {
  const char* sql = stmt_ ? sqlite3_sql(stmt_) : nullptr;
  std::string m = "SQLite database '" + db_->path() + "': " + sqlite3_errmsg(db_->handle());
  if (sql) m += " (in: " + std::string(sql).substr(0, 120) + ")";
  return SqliteStatus(rc, std::move(m));
}

}  // namespace ellm::store

// SPDX-License-Identifier: Apache-2.0
#include "server/store/sqlite_query.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace collbench::store_internal {

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view operation) {
  std::string message =
      absl::StrCat("sqlite ", operation, ": ",
                   db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {  // the primary code of an extended one
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    case SQLITE_FULL:  // no space left on the file system (or the size limit)
      return absl::ResourceExhaustedError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status Exec(sqlite3* db, const char* sql, absl::string_view operation) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : SqliteError(db, rc, operation);
}

Query::~Query() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

Query& Query::Int(int64_t value) {
  return Check(sqlite3_bind_int64(statement_, next_++, value));
}

Query& Query::Text(absl::string_view text) {
  return Check(sqlite3_bind_text64(statement_, next_++, text.data(),
                                   text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

Query& Query::Blob(absl::string_view bytes) {
  return Check(sqlite3_bind_blob64(statement_, next_++, bytes.data(),
                                   bytes.size(), SQLITE_TRANSIENT));
}

Query& Query::Null() { return Check(sqlite3_bind_null(statement_, next_++)); }

absl::StatusOr<bool> Query::Step() {
  if (bind_rc_ != SQLITE_OK) return SqliteError(db_, bind_rc_, operation_);
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, operation_);
}

absl::StatusOr<int> Query::Execute() {
  ASSIGN_OR_RETURN(const bool row, Step());
  if (row) {
    return absl::InternalError(
        absl::StrCat("sqlite ", operation_, ": unexpected result row"));
  }
  return sqlite3_changes(db_);
}

int64_t Query::ColumnInt(int column) const {
  return sqlite3_column_int64(statement_, column);
}

bool Query::ColumnIsNull(int column) const {
  return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

std::string Query::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(statement_, column);
  const int size = sqlite3_column_bytes(statement_, column);
  return text == nullptr ? std::string()
                         : std::string(reinterpret_cast<const char*>(text), size);
}

absl::Status Query::ColumnProto(int column,
                                google::protobuf::MessageLite* message,
                                absl::string_view what) const {
  const void* bytes = sqlite3_column_blob(statement_, column);
  const int size = sqlite3_column_bytes(statement_, column);
  if (!message->ParseFromArray(bytes, size)) {
    return absl::DataLossError(absl::StrCat("sqlite ", operation_, ": stored ",
                                            what, " is unreadable"));
  }
  return absl::OkStatus();
}

Query& Query::Check(int rc) {
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

}  // namespace collbench::store_internal

// SPDX-License-Identifier: Apache-2.0
// Thin RAII over the SQLite C API for the SQLite store: owned connections
// and statements, one-shot statement executions, result codes as Status.
// Not for use outside server/store/.
#ifndef COLLBENCH_SERVER_STORE_SQLITE_QUERY_H_
#define COLLBENCH_SERVER_STORE_SQLITE_QUERY_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"

namespace collbench::store_internal {

struct StatementDeleter {
  void operator()(sqlite3_stmt* statement) const {
    sqlite3_finalize(statement);
  }
};
using StatementPtr = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

struct ConnectionCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using ConnectionPtr = std::unique_ptr<sqlite3, ConnectionCloser>;

// The Status for SQLite result code `rc` from `operation` on `db` (which may
// be null): "sqlite OPERATION: sqlite3_errmsg". Busy and locked map to
// Unavailable, constraint violations to AlreadyExists, a corrupt file or
// one that is no database to DataLoss, access problems to PermissionDenied,
// the rest to Internal.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view operation);

// Runs `sql` (one or more statements whose rows are not wanted).
absl::Status Exec(sqlite3* db, const char* sql, absl::string_view operation);

// One execution of a prepared statement: binds parameters 1, 2, … in call
// order (values are copied), steps, reads columns of the current row. Resets
// the statement and clears its bindings when destroyed, so no read lock
// outlives the execution and the statement is ready for the next one.
// REQUIRES: `db` and `statement` outlive the Query; one Query per statement
// at a time (the caller serializes).
class Query {
 public:
  // `operation` names the statement in errors; it must outlive the Query.
  Query(sqlite3* db, sqlite3_stmt* statement, absl::string_view operation)
      : db_(db), statement_(statement), operation_(operation) {}
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  // Binding errors are kept and returned by the next Step.
  Query& Int(int64_t value);
  Query& Text(absl::string_view text);
  Query& Blob(absl::string_view bytes);
  Query& Null();

  // Steps once: true when a row is ready to read, false when done.
  absl::StatusOr<bool> Step();

  // Steps a statement that yields no rows; the number of rows it inserted,
  // updated or deleted.
  absl::StatusOr<int> Execute();

  // Column `column` of the current row. REQUIRES: Step returned true.
  int64_t ColumnInt(int column) const;
  // Whether column `column` of the current row is NULL. REQUIRES: Step
  // returned true.
  bool ColumnIsNull(int column) const;
  // Column `column` of the current row as text. REQUIRES: Step returned true.
  std::string ColumnText(int column) const;
  // Parses column `column` of the current row into `message`; DataLoss
  // naming `what` if the bytes are not one. REQUIRES: Step returned true.
  absl::Status ColumnProto(int column, google::protobuf::MessageLite* message,
                           absl::string_view what) const;

 private:
  Query& Check(int rc);

  sqlite3* db_;
  sqlite3_stmt* statement_;
  absl::string_view operation_;
  int next_ = 1;
  int bind_rc_ = SQLITE_OK;
};

}  // namespace collbench::store_internal

#endif  // COLLBENCH_SERVER_STORE_SQLITE_QUERY_H_

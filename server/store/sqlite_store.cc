// SPDX-License-Identifier: Apache-2.0
// The SQLite Store: one file in WAL mode, every commit fsynced, so what a
// call reported as stored survives kill -9 and power loss
// (docs/design/store.md#durability-contract).
//
// Each row keeps the whole serialized proto (the truth) next to the columns
// that are queried or worth reading with the sqlite3 shell; a run's progress
// (sizes_done, wrong) is the exception, kept in columns that AddResults
// counts up. One connection, used under one mutex: run and worker rows
// change a few times per second, results come in batches (AddResults, one
// transaction per batch).
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/store/sqlite_query.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace collbench {
namespace {

using store_internal::ConnectionPtr;
using store_internal::Exec;
using store_internal::Query;
using store_internal::RunNotFound;
using store_internal::SqliteError;
using store_internal::StatementPtr;

// Schema migrations: entry i takes the schema from version i to i + 1.
// Append only; a released entry is never edited.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE workers (
  name TEXT PRIMARY KEY,            -- workers/{id}
  state INTEGER NOT NULL,           -- collbench.v1.WorkerState
  host_id TEXT NOT NULL,
  data BLOB NOT NULL,               -- serialized collbench.v1.Worker
  update_time_ns INTEGER NOT NULL   -- when this row was last written
);
CREATE TABLE runs (
  name TEXT PRIMARY KEY,            -- runs/{id}
  request_id TEXT UNIQUE,           -- NULL when the caller gave none
  state INTEGER NOT NULL,           -- collbench.v1.RunState
  create_time_ns INTEGER NOT NULL,
  start_time_ns INTEGER NOT NULL,
  end_time_ns INTEGER NOT NULL,
  error TEXT NOT NULL,
  spec BLOB NOT NULL,               -- serialized collbench.v1.RunSpec
  data BLOB NOT NULL                -- serialized collbench.v1.Run, spec cleared
);
CREATE INDEX runs_by_create_time ON runs (create_time_ns, name);
CREATE INDEX runs_by_state ON runs (state, create_time_ns, name);
CREATE TABLE results (
  run TEXT NOT NULL,                -- runs/{id}
  sequence INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  data BLOB NOT NULL,               -- serialized collbench.v1.SizeResult
  PRIMARY KEY (run, sequence)
) WITHOUT ROWID;
)sql",
    R"sql(
CREATE TABLE worker_credentials (
  name TEXT PRIMARY KEY,            -- workers/{id}
  secret_hash TEXT NOT NULL,        -- hash of the secret issued to it
  update_time_ns INTEGER NOT NULL
);
)sql",
    // A run's progress is counted where its results are written, in the
    // same transaction, rather than rewritten with the whole row: these
    // columns are its truth (the copies in `data` are not read). Rows of
    // schema 2 get them from their `data` (BackfillRunProgress).
    R"sql(
ALTER TABLE runs ADD COLUMN sizes_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN wrong INTEGER NOT NULL DEFAULT 0;
)sql",
    R"sql(
CREATE TABLE workflows (
  name TEXT PRIMARY KEY,            -- workflows/{id}
  create_time_ns INTEGER NOT NULL,
  state INTEGER NOT NULL,           -- collbench.v1.WorkflowState
  data BLOB NOT NULL,               -- serialized collbench.v1.Workflow
  report BLOB                       -- a report workflow's HTML page
);
)sql",
    R"sql(
CREATE TABLE baselines (
  name TEXT PRIMARY KEY,            -- baselines/{id}
  data BLOB NOT NULL                -- serialized collbench.v1.Baseline
);
CREATE TABLE schedules (
  name TEXT PRIMARY KEY,            -- schedules/{id}
  data BLOB NOT NULL                -- serialized collbench.v1.Schedule
);
)sql",
    // A cell's change writes the workflow's own fields (`head`) and that
    // cell, not the whole workflow again (PutWorkflowCell); `data` stays
    // as last put whole, and a whole put clears both.
    R"sql(
ALTER TABLE workflows ADD COLUMN head BLOB;  -- the workflow, cells cleared; NULL: data's
CREATE TABLE workflow_cells (
  workflow TEXT NOT NULL,           -- workflows/{id}
  cell INTEGER NOT NULL,            -- index in the workflow's cells
  data BLOB NOT NULL,               -- serialized collbench.v1.WorkflowCell
  PRIMARY KEY (workflow, cell)
) WITHOUT ROWID;
)sql",
};
constexpr int kSchemaVersion = std::size(kMigrations);

// How long a write waits for another connection's lock before Unavailable.
constexpr int kBusyTimeoutMs = 10'000;

// The schema whose migration added the progress columns.
constexpr int kProgressColumnsSchema = 3;

// The run in the current row of a query that selects kRunRead.
absl::StatusOr<v1::Run> ReadRun(const Query& query) {
  v1::Run run;
  RETURN_IF_ERROR(query.ColumnProto(1, &run, "run"));
  RETURN_IF_ERROR(query.ColumnProto(0, run.mutable_spec(), "run spec"));
  run.set_sizes_done(static_cast<int32_t>(query.ColumnInt(2)));
  run.set_wrong(static_cast<uint64_t>(query.ColumnInt(3)));
  return run;
}

// Every statement the store runs, prepared once at open.
struct Statements {
  StatementPtr insert_run, update_run, update_run_except_progress, get_run, find_run_by_request_id,
      list_runs, list_unfinished_runs, insert_result, add_progress, list_results, upsert_worker,
      list_workers, set_secret_hash, list_credentials, delete_worker_row, delete_secret_hash,
      list_finished_runs, delete_results, delete_run, put_workflow, list_workflows,
      put_workflow_report, get_workflow_report, delete_workflow, put_workflow_head,
      put_workflow_cell, list_workflow_cells, delete_workflow_cells, put_baseline, get_baseline,
      list_baselines, delete_baseline, put_schedule, list_schedules, delete_schedule;
};

// insert_run and update_run bind ?1 … ?11 in this order (BindRun, then
// BindProgress); update_run_except_progress ?1 … ?9.
constexpr char kRunColumns[] =
    "name, request_id, state, create_time_ns, start_time_ns, end_time_ns, "
    "error, spec, data, sizes_done, wrong";
// What ReadRun reads, in this order.
constexpr char kRunRead[] = "SELECT spec, data, sizes_done, wrong FROM runs ";
constexpr char kListRunsWhere[] =
    "WHERE (?1 = 0 OR state = ?1) AND "
    "(?2 IS NULL OR create_time_ns < ?2 OR "
    "(create_time_ns = ?2 AND name < ?3)) "
    "ORDER BY create_time_ns DESC, name DESC LIMIT ?4";

absl::StatusOr<Statements> PrepareStatements(sqlite3* db) {
  Statements s;
  const std::pair<StatementPtr*, std::string> all[] = {
      {&s.insert_run, absl::StrCat("INSERT INTO runs (", kRunColumns,
                                   ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                                   "?9, ?10, ?11)")},
      {&s.update_run,
       "UPDATE runs SET request_id = ?2, state = ?3, create_time_ns = ?4, "
       "start_time_ns = ?5, end_time_ns = ?6, error = ?7, spec = ?8, "
       "data = ?9, sizes_done = ?10, wrong = ?11 WHERE name = ?1"},
      {&s.update_run_except_progress,
       "UPDATE runs SET request_id = ?2, state = ?3, create_time_ns = ?4, "
       "start_time_ns = ?5, end_time_ns = ?6, error = ?7, spec = ?8, "
       "data = ?9 WHERE name = ?1"},
      {&s.get_run, absl::StrCat(kRunRead, "WHERE name = ?1")},
      {&s.find_run_by_request_id, absl::StrCat(kRunRead, "WHERE request_id = ?1")},
      {&s.list_runs, absl::StrCat(kRunRead, kListRunsWhere)},
      {&s.list_unfinished_runs,
       absl::StrCat(kRunRead, "WHERE state IN (?1, ?2, ?3) ORDER BY create_time_ns, name")},
      {&s.insert_result,
       "INSERT OR IGNORE INTO results (run, sequence, bytes, data) "
       "VALUES (?1, ?2, ?3, ?4)"},
      {&s.add_progress,
       "UPDATE runs SET sizes_done = sizes_done + ?2, wrong = wrong + ?3 "
       "WHERE name = ?1"},
      {&s.list_results, "SELECT data FROM results WHERE run = ?1 ORDER BY sequence"},
      {&s.upsert_worker,
       "INSERT OR REPLACE INTO workers (name, state, host_id, data, "
       "update_time_ns) VALUES (?1, ?2, ?3, ?4, ?5)"},
      {&s.list_workers, "SELECT data FROM workers ORDER BY name"},
      // update_time_ns is the secret's issue time: a name's secret is set
      // once, when the coordinator first admits it (again only after an
      // operator forgets the name).
      {&s.set_secret_hash,
       "INSERT OR REPLACE INTO worker_credentials (name, secret_hash, "
       "update_time_ns) VALUES (?1, ?2, ?3)"},
      {&s.list_credentials,
       "SELECT name, secret_hash, update_time_ns FROM worker_credentials ORDER BY name"},
      {&s.delete_worker_row, "DELETE FROM workers WHERE name = ?1"},
      {&s.delete_secret_hash, "DELETE FROM worker_credentials WHERE name = ?1"},
      {&s.list_finished_runs,
       "SELECT name, create_time_ns, end_time_ns FROM runs WHERE state IN (?1, ?2, ?3) "
       "ORDER BY create_time_ns DESC, name DESC"},
      {&s.delete_results, "DELETE FROM results WHERE run = ?1"},
      {&s.delete_run, "DELETE FROM runs WHERE name = ?1"},
      {&s.put_workflow,
       "INSERT INTO workflows (name, create_time_ns, state, data) VALUES (?1, ?2, ?3, ?4) "
       "ON CONFLICT (name) DO UPDATE SET create_time_ns = ?2, state = ?3, data = ?4, "
       "head = NULL"},
      {&s.list_workflows,
       "SELECT data, head FROM workflows ORDER BY create_time_ns DESC, name DESC"},
      {&s.put_workflow_head, "UPDATE workflows SET state = ?2, head = ?3 WHERE name = ?1"},
      {&s.put_workflow_cell,
       "INSERT INTO workflow_cells (workflow, cell, data) VALUES (?1, ?2, ?3) "
       "ON CONFLICT (workflow, cell) DO UPDATE SET data = ?3"},
      {&s.list_workflow_cells, "SELECT workflow, cell, data FROM workflow_cells"},
      {&s.delete_workflow_cells, "DELETE FROM workflow_cells WHERE workflow = ?1"},
      {&s.put_workflow_report, "UPDATE workflows SET report = ?2 WHERE name = ?1"},
      {&s.get_workflow_report,
       "SELECT report FROM workflows WHERE name = ?1 AND report IS NOT NULL"},
      {&s.delete_workflow, "DELETE FROM workflows WHERE name = ?1"},
      {&s.put_baseline,
       "INSERT INTO baselines (name, data) VALUES (?1, ?2) "
       "ON CONFLICT (name) DO UPDATE SET data = ?2"},
      {&s.get_baseline, "SELECT data FROM baselines WHERE name = ?1"},
      {&s.list_baselines, "SELECT data FROM baselines ORDER BY name"},
      {&s.delete_baseline, "DELETE FROM baselines WHERE name = ?1"},
      {&s.put_schedule,
       "INSERT INTO schedules (name, data) VALUES (?1, ?2) "
       "ON CONFLICT (name) DO UPDATE SET data = ?2"},
      {&s.list_schedules, "SELECT data FROM schedules ORDER BY name"},
      {&s.delete_schedule, "DELETE FROM schedules WHERE name = ?1"},
  };
  for (const auto& [statement, sql] : all) {
    sqlite3_stmt* raw = nullptr;
    const int rc = sqlite3_prepare_v3(db, sql.c_str(), -1,
                                      SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK) {
      return SqliteError(db, rc, absl::StrCat("prepare ", sql));
    }
    statement->reset(raw);
  }
  return s;
}

// Copies each run's progress from its `data` into the columns that
// migration 3 added (inside the migration's transaction).
absl::Status BackfillRunProgress(sqlite3* db) {
  std::vector<std::pair<std::string, v1::Run>> runs;
  {
    sqlite3_stmt* raw = nullptr;
    const char* sql = "SELECT name, data FROM runs";
    const int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db, rc, "read run progress");
    StatementPtr read(raw);
    Query query(db, raw, "read run progress");
    while (true) {
      ASSIGN_OR_RETURN(const bool row, query.Step());
      if (!row) break;
      auto& [name, run] = runs.emplace_back();
      name = query.ColumnText(0);
      RETURN_IF_ERROR(query.ColumnProto(1, &run, "run"));
    }
  }
  sqlite3_stmt* raw = nullptr;
  const char* sql = "UPDATE runs SET sizes_done = ?2, wrong = ?3 WHERE name = ?1";
  const int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "backfill run progress");
  StatementPtr update(raw);
  for (const auto& [name, run] : runs) {
    Query query(db, raw, "backfill run progress");
    query.Text(name).Int(run.sizes_done()).Int(static_cast<int64_t>(run.wrong()));
    RETURN_IF_ERROR(query.Execute().status());
  }
  return absl::OkStatus();
}

// Brings the schema to kSchemaVersion in one transaction, applying each
// missing migration in order. Concurrent openers serialize on the write lock.
absl::Status Migrate(sqlite3* db) {
  RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE", "begin migration"));
  auto migrate = [db]() -> absl::Status {
    RETURN_IF_ERROR(Exec(db,
                         "CREATE TABLE IF NOT EXISTS schema_version ("
                         "version INTEGER PRIMARY KEY, "
                         "apply_time_ns INTEGER NOT NULL)",
                         "create schema_version"));
    sqlite3_stmt* raw = nullptr;
    const char* sql = "SELECT IFNULL(MAX(version), 0) FROM schema_version";
    int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db, rc, "read schema version");
    StatementPtr read_version(raw);
    Query query(db, raw, "read schema version");
    ASSIGN_OR_RETURN(const bool row, query.Step());
    const int64_t version = row ? query.ColumnInt(0) : 0;
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "store schema version ", version, " is newer than this build's ",
          kSchemaVersion, "; upgrade collbench-coordinator"));
    }
    for (int64_t next = version; next < kSchemaVersion; ++next) {
      RETURN_IF_ERROR(Exec(db, kMigrations[next],
                           absl::StrCat("migrate schema to ", next + 1)));
      if (next + 1 == kProgressColumnsSchema) {
        RETURN_IF_ERROR(BackfillRunProgress(db));
      }
      RETURN_IF_ERROR(
          Exec(db,
               absl::StrCat("INSERT INTO schema_version VALUES (", next + 1,
                            ", ", absl::GetCurrentTimeNanos(), ")")
                   .c_str(),
               "record schema version"));
    }
    return absl::OkStatus();
  };
  absl::Status status = migrate();
  if (!status.ok()) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return status;
  }
  return Exec(db, "COMMIT", "commit migration");
}

// Sets the connection up for durability (WAL, fsync per commit, busy wait)
// and for the result writer's batches.
absl::Status Configure(sqlite3* db) {
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  char** table = nullptr;
  int rows = 0, columns = 0;
  const int rc = sqlite3_get_table(db, "PRAGMA journal_mode=WAL", &table, &rows,
                                   &columns, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "PRAGMA journal_mode=WAL");
  const std::string mode = rows == 1 && columns == 1 ? table[1] : "";
  sqlite3_free_table(table);
  // An in-memory database has no journal to put in WAL mode.
  if (mode != "wal" && mode != "memory") {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite PRAGMA journal_mode=WAL: the file system allows only \"", mode,
        "\" (WAL needs shared memory; network file systems lack it)"));
  }
  RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous=FULL", "PRAGMA synchronous=FULL"));
  // Results of many runs interleave, so every batch dirties one leaf page
  // per run: a 64 MiB page cache keeps them (the default 2 MiB spilled and
  // read them back), and a 32 MiB WAL lets a checkpoint write each hot page
  // once for many commits (the default copied the WAL back every 4 MiB).
  RETURN_IF_ERROR(Exec(db, "PRAGMA cache_size=-65536", "PRAGMA cache_size"));
  return Exec(db, "PRAGMA wal_autocheckpoint=8192", "PRAGMA wal_autocheckpoint");
}

// Binds ?1 … ?9 of insert_run / update_run (kRunColumns) from `run`.
void BindRun(Query& query, const v1::Run& run) {
  v1::Run data = run;
  data.clear_spec();
  query.Text(run.name());
  if (run.request_id().empty()) {
    query.Null();
  } else {
    query.Text(run.request_id());
  }
  query.Int(run.state())
      .Int(store_internal::CreateTimeNs(run))
      .Int(store_internal::TimestampNs(run.start_time()))
      .Int(store_internal::TimestampNs(run.end_time()))
      .Text(run.error())
      .Blob(run.spec().SerializeAsString())
      .Blob(data.SerializeAsString());
}

// Binds ?10 and ?11 of insert_run / update_run: the run's progress.
void BindProgress(Query& query, const v1::Run& run) {
  query.Int(run.sizes_done()).Int(static_cast<int64_t>(run.wrong()));
}

// A second connection for reads. In WAL mode it reads the last commit
// while the writer's connection is in a transaction, so an API read never
// waits for a batch of results to reach the disk.
struct ReadConnection {
  absl::Mutex mu;
  // Declared before the statements: they are finalized before it closes.
  ConnectionPtr db;
  Statements statements;
};

// The run `name` read with `db`'s get_run; NotFound naming it.
absl::StatusOr<v1::Run> GetRunWith(sqlite3* db, const Statements& s,
                                   absl::string_view name) {
  Query query(db, s.get_run.get(), "get run");
  query.Text(name);
  ASSIGN_OR_RETURN(const bool found, query.Step());
  if (!found) return RunNotFound(name);
  return ReadRun(query);
}

absl::StatusOr<v1::Run> FindRunByRequestIdWith(sqlite3* db, const Statements& s,
                                               absl::string_view request_id) {
  Query query(db, s.find_run_by_request_id.get(), "find run by request_id");
  query.Text(request_id);
  ASSIGN_OR_RETURN(const bool found, query.Step());
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat("no run with request_id \"", request_id, "\""));
  }
  return ReadRun(query);
}

class SqliteStore final : public Store {
 public:
  // `reader` may be null (a database in memory has no second connection):
  // reads then use the writer's connection.
  SqliteStore(std::string path, ConnectionPtr db, Statements statements,
              std::unique_ptr<ReadConnection> reader)
      : path_(std::move(path)),
        db_(std::move(db)),
        statements_(std::move(statements)),
        reader_(std::move(reader)) {}

  absl::StatusOr<std::vector<WriteResult>> Commit(const std::vector<Write>& writes) override {
    if (writes.empty()) return std::vector<WriteResult>();
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(Written(Exec(db_.get(), "BEGIN IMMEDIATE", "begin commit")));
    std::vector<WriteResult> results;
    results.reserve(writes.size());
    absl::Status status = absl::OkStatus();
    for (const Write& write : writes) {
      absl::StatusOr<WriteResult> applied =
          std::visit([&](const auto& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ApplyLocked(w); },
                     write);
      status = applied.status();
      if (!status.ok()) break;
      results.push_back(*std::move(applied));
    }
    if (status.ok()) status = Exec(db_.get(), "COMMIT", "commit");
    if (!status.ok()) {
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      return Written(status);
    }
    return results;
  }

  absl::StatusOr<v1::Run> GetRun(absl::string_view name) override {
    return Read([&](sqlite3* db, const Statements& s) { return GetRunWith(db, s, name); });
  }

  absl::StatusOr<v1::Run> FindRunByRequestId(
      absl::string_view request_id) override {
    return Read([&](sqlite3* db, const Statements& s) {
      return FindRunByRequestIdWith(db, s, request_id);
    });
  }

  absl::StatusOr<RunPage> ListRuns(int page_size, absl::string_view page_token,
                                   v1::RunState state) override {
    ASSIGN_OR_RETURN(const int limit,
                     store_internal::EffectivePageSize(page_size));
    return Read([&](sqlite3* db, const Statements& s) {
      return ListRunsWith(db, s, limit, page_token, state);
    });
  }

  absl::StatusOr<std::vector<v1::Run>> ListUnfinishedRuns() override {
    return Read([](sqlite3* db, const Statements& s) {
      Query query(db, s.list_unfinished_runs.get(), "list unfinished runs");
      query.Int(v1::QUEUED).Int(v1::SCHEDULED).Int(v1::RUNNING);
      return ReadRuns(query);
    });
  }

 private:
  static absl::StatusOr<RunPage> ListRunsWith(sqlite3* db, const Statements& s, int limit,
                                              absl::string_view page_token,
                                              v1::RunState state) {
    Query query(db, s.list_runs.get(), "list runs");
    query.Int(state);
    if (page_token.empty()) {
      query.Null().Null();
    } else {
      ASSIGN_OR_RETURN(const store_internal::RunPosition after,
                       store_internal::DecodePageToken(page_token, state));
      query.Int(after.create_time_ns).Text(after.name);
    }
    // One more than the page: whether it exists decides the next token.
    query.Int(limit + 1);
    RunPage page;
    ASSIGN_OR_RETURN(std::vector<v1::Run> runs, ReadRuns(query));
    if (static_cast<int>(runs.size()) > limit) {
      runs.resize(limit);
      page.next_page_token = store_internal::EncodePageToken(
          {store_internal::CreateTimeNs(runs.back()), runs.back().name()},
          state);
    }
    page.runs = std::move(runs);
    return page;
  }

 public:
  absl::StatusOr<bool> AddResult(absl::string_view run,
                                 const v1::SizeResult& result) override {
    RETURN_IF_ERROR(store_internal::ValidateResultSequence(result));
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(GetRunLocked(run).status());
    Query query(db_.get(), statements_.insert_result.get(), "insert result");
    query.Text(run)
        .Int(result.sequence())
        .Int(static_cast<int64_t>(result.bytes()))
        .Blob(result.SerializeAsString());
    const absl::StatusOr<int> inserted = query.Execute();
    if (!inserted.ok()) return Written(inserted.status());
    return *inserted == 1;
  }

  absl::StatusOr<std::vector<v1::SizeResult>> ListResults(
      absl::string_view run) override {
    return Read([&](sqlite3* db, const Statements& s)
                    -> absl::StatusOr<std::vector<v1::SizeResult>> {
      RETURN_IF_ERROR(GetRunWith(db, s, run).status());
      Query query(db, s.list_results.get(), "list results");
      query.Text(run);
      return ReadAll<v1::SizeResult>(query, "result");
    });
  }

  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override {
    return Read([](sqlite3* db, const Statements& s) {
      Query query(db, s.list_workers.get(), "list workers");
      return ReadAll<v1::Worker>(query, "worker");
    });
  }

  absl::StatusOr<std::map<std::string, WorkerCredential>> ListWorkerCredentials() override {
    return Read([](sqlite3* db,
                   const Statements& s) -> absl::StatusOr<std::map<std::string, WorkerCredential>> {
      Query query(db, s.list_credentials.get(), "list worker credentials");
      std::map<std::string, WorkerCredential> credentials;
      while (true) {
        ASSIGN_OR_RETURN(const bool row, query.Step());
        if (!row) break;
        credentials[query.ColumnText(0)] = {query.ColumnText(1),
                                            absl::FromUnixNanos(query.ColumnInt(2))};
      }
      return credentials;
    });
  }

  absl::Status PutWorkflow(const v1::Workflow& workflow) override {
    RETURN_IF_ERROR(store_internal::ValidateWorkflowName(workflow.name()));
    absl::MutexLock lock(&mu_);
    return InTransactionLocked("put workflow", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      Query put(db_.get(), statements_.put_workflow.get(), "put workflow");
      put.Text(workflow.name())
          .Int(store_internal::TimestampNs(workflow.create_time()))
          .Int(workflow.state())
          .Blob(workflow.SerializeAsString());
      RETURN_IF_ERROR(put.Execute().status());
      Query cells(db_.get(), statements_.delete_workflow_cells.get(), "put workflow");
      cells.Text(workflow.name());
      return cells.Execute().status();
    });
  }

  absl::Status PutWorkflowCell(const v1::Workflow& head, int index,
                               const v1::WorkflowCell& cell) override {
    absl::MutexLock lock(&mu_);
    return InTransactionLocked("put workflow cell", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      v1::Workflow own = head;  // a copy only when the caller left cells in
      if (own.cells_size() > 0) own.clear_cells();
      Query put(db_.get(), statements_.put_workflow_head.get(), "put workflow cell");
      put.Text(head.name()).Int(head.state()).Blob(own.SerializeAsString());
      ASSIGN_OR_RETURN(const int changed, put.Execute());
      if (changed == 0) return store_internal::WorkflowNotFound(head.name());
      Query write(db_.get(), statements_.put_workflow_cell.get(), "put workflow cell");
      write.Text(head.name()).Int(index).Blob(cell.SerializeAsString());
      return write.Execute().status();
    });
  }

  absl::StatusOr<std::vector<v1::Workflow>> ListWorkflows() override {
    return Read([](sqlite3* db, const Statements& s) -> absl::StatusOr<std::vector<v1::Workflow>> {
      std::vector<v1::Workflow> workflows;
      std::map<std::string, v1::Workflow*> by_name;
      Query query(db, s.list_workflows.get(), "list workflows");
      while (true) {
        ASSIGN_OR_RETURN(const bool row, query.Step());
        if (!row) break;
        v1::Workflow& workflow = workflows.emplace_back();
        RETURN_IF_ERROR(query.ColumnProto(0, &workflow, "workflow"));
        if (!query.ColumnIsNull(1)) {  // its own fields changed since: head's
          google::protobuf::RepeatedPtrField<v1::WorkflowCell> cells;
          cells.Swap(workflow.mutable_cells());
          RETURN_IF_ERROR(query.ColumnProto(1, &workflow, "workflow head"));
          workflow.mutable_cells()->Swap(&cells);
        }
      }
      for (v1::Workflow& workflow : workflows) by_name[workflow.name()] = &workflow;
      Query cells(db, s.list_workflow_cells.get(), "list workflow cells");
      while (true) {
        ASSIGN_OR_RETURN(const bool row, cells.Step());
        if (!row) break;
        auto it = by_name.find(cells.ColumnText(0));
        const int64_t index = cells.ColumnInt(1);
        if (it == by_name.end() || index < 0 || index >= it->second->cells_size()) continue;
        RETURN_IF_ERROR(cells.ColumnProto(2, it->second->mutable_cells(static_cast<int>(index)),
                                          "workflow cell"));
      }
      return workflows;
    });
  }

  absl::Status PutWorkflowReport(absl::string_view name, const std::string& html) override {
    absl::MutexLock lock(&mu_);
    Query query(db_.get(), statements_.put_workflow_report.get(), "put workflow report");
    query.Text(name).Blob(html);
    absl::StatusOr<int> changed = query.Execute();
    if (!changed.ok()) return Written(changed.status());
    if (*changed == 0) return store_internal::WorkflowNotFound(name);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> GetWorkflowReport(absl::string_view name) override {
    return Read([&](sqlite3* db, const Statements& s) -> absl::StatusOr<std::string> {
      Query query(db, s.get_workflow_report.get(), "get workflow report");
      query.Text(name);
      ASSIGN_OR_RETURN(const bool found, query.Step());
      if (!found) {
        return absl::NotFoundError(absl::StrCat("workflow ", name, " has no stored report"));
      }
      return query.ColumnText(0);
    });
  }

  absl::Status DeleteWorkflow(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(
        const std::vector<int> changed,
        DeleteLocked({statements_.delete_workflow.get(), statements_.delete_workflow_cells.get()},
                     name, "delete workflow"));
    if (changed[0] == 0) return store_internal::WorkflowNotFound(name);
    return absl::OkStatus();
  }

  absl::Status PutBaseline(const v1::Baseline& baseline) override {
    RETURN_IF_ERROR(store_internal::ValidateBaselineName(baseline.name()));
    absl::MutexLock lock(&mu_);
    Query query(db_.get(), statements_.put_baseline.get(), "put baseline");
    query.Text(baseline.name()).Blob(baseline.SerializeAsString());
    return Written(query.Execute().status());
  }

  absl::StatusOr<v1::Baseline> GetBaseline(absl::string_view name) override {
    return Read([&](sqlite3* db, const Statements& s) -> absl::StatusOr<v1::Baseline> {
      Query query(db, s.get_baseline.get(), "get baseline");
      query.Text(name);
      ASSIGN_OR_RETURN(std::vector<v1::Baseline> found, ReadAll<v1::Baseline>(query, "baseline"));
      if (found.empty()) return store_internal::NotFoundNamed("baseline", name);
      return std::move(found.front());
    });
  }

  absl::StatusOr<std::vector<v1::Baseline>> ListBaselines() override {
    return Read([](sqlite3* db, const Statements& s) {
      Query query(db, s.list_baselines.get(), "list baselines");
      return ReadAll<v1::Baseline>(query, "baseline");
    });
  }

  absl::Status DeleteBaseline(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(const std::vector<int> changed,
                     DeleteLocked({statements_.delete_baseline.get()}, name, "delete baseline"));
    if (changed[0] == 0) return store_internal::NotFoundNamed("baseline", name);
    return absl::OkStatus();
  }

  absl::Status PutSchedule(const v1::Schedule& schedule) override {
    RETURN_IF_ERROR(store_internal::ValidateScheduleName(schedule.name()));
    absl::MutexLock lock(&mu_);
    Query query(db_.get(), statements_.put_schedule.get(), "put schedule");
    query.Text(schedule.name()).Blob(schedule.SerializeAsString());
    return Written(query.Execute().status());
  }

  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules() override {
    return Read([](sqlite3* db, const Statements& s) {
      Query query(db, s.list_schedules.get(), "list schedules");
      return ReadAll<v1::Schedule>(query, "schedule");
    });
  }

  absl::Status DeleteSchedule(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(const std::vector<int> changed,
                     DeleteLocked({statements_.delete_schedule.get()}, name, "delete schedule"));
    if (changed[0] == 0) return store_internal::NotFoundNamed("schedule", name);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<FinishedRun>> ListFinishedRuns() override {
    return Read([](sqlite3* db, const Statements& s)
                    -> absl::StatusOr<std::vector<FinishedRun>> {
      Query query(db, s.list_finished_runs.get(), "list finished runs");
      query.Int(v1::SUCCEEDED).Int(v1::FAILED).Int(v1::CANCELLED);
      std::vector<FinishedRun> runs;
      while (true) {
        ASSIGN_OR_RETURN(const bool row, query.Step());
        if (!row) return runs;
        runs.push_back({query.ColumnText(0), query.ColumnInt(1), query.ColumnInt(2)});
      }
    });
  }

  absl::Status DeleteRun(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(const std::vector<int> changed,
                     DeleteLocked({statements_.delete_results.get(),
                                   statements_.delete_run.get()},
                                  name, "delete run"));
    return changed[1] == 0 ? RunNotFound(name) : absl::OkStatus();
  }

 private:
  // The writes of Commit, inside its transaction. Each checks what its
  // method checks before it changes anything.
  absl::StatusOr<WriteResult> ApplyLocked(const CreateRunWrite& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const v1::Run& run = w.run;
    RETURN_IF_ERROR(store_internal::ValidateRunName(run.name()));
    absl::StatusOr<v1::Run> existing = GetRunLocked(run.name());
    if (existing.ok()) {
      return absl::AlreadyExistsError(absl::StrCat("run ", run.name(), " already exists"));
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();
    RETURN_IF_ERROR(CheckRequestIdFree(run));
    Query query(db_.get(), statements_.insert_run.get(), "insert run");
    BindRun(query, run);
    BindProgress(query, run);
    RETURN_IF_ERROR(query.Execute().status());
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const UpdateRunWrite& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(CheckRequestIdFree(w.run));
    Query query(db_.get(),
                w.with_progress ? statements_.update_run.get()
                                : statements_.update_run_except_progress.get(),
                "update run");
    BindRun(query, w.run);
    if (w.with_progress) BindProgress(query, w.run);
    ASSIGN_OR_RETURN(const int changed, query.Execute());
    if (changed == 0) return RunNotFound(w.run.name());
    return WriteResult();
  }

  // The rows, then each run's progress once.
  absl::StatusOr<WriteResult> ApplyLocked(const AddResultsWrite& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    struct Progress {
      int64_t sizes_done = 0;
      int64_t wrong = 0;
    };
    for (const ResultRow& row : w.rows) {
      RETURN_IF_ERROR(store_internal::ValidateResultSequence(row.result));
    }
    std::map<absl::string_view, Progress> progress;
    WriteResult result;
    result.inserted.reserve(w.rows.size());
    std::string blob;
    for (const ResultRow& row : w.rows) {
      row.result.SerializeToString(&blob);
      Query query(db_.get(), statements_.insert_result.get(), "insert result");
      query.Text(row.run)
          .Int(row.result.sequence())
          .Int(static_cast<int64_t>(row.result.bytes()))
          .Blob(blob);
      ASSIGN_OR_RETURN(const int added, query.Execute());
      result.inserted.push_back(added == 1);
      Progress& p = progress[row.run];
      if (added == 1) {
        ++p.sizes_done;
        p.wrong += static_cast<int64_t>(row.result.wrong());
      }
    }
    for (const auto& [run, p] : progress) {
      Query query(db_.get(), statements_.add_progress.get(), "add progress");
      query.Text(run).Int(p.sizes_done).Int(p.wrong);
      ASSIGN_OR_RETURN(const int changed, query.Execute());
      if (changed == 0) return RunNotFound(run);
    }
    return result;
  }

  absl::StatusOr<WriteResult> ApplyLocked(const UpsertWorkersWrite& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const v1::Worker& worker : w.workers) {
      RETURN_IF_ERROR(store_internal::ValidateWorkerName(worker.name()));
    }
    const int64_t now_ns = absl::GetCurrentTimeNanos();
    for (const v1::Worker& worker : w.workers) {
      Query query(db_.get(), statements_.upsert_worker.get(), "upsert worker");
      query.Text(worker.name())
          .Int(worker.state())
          .Text(worker.inventory().host_id())
          .Blob(worker.SerializeAsString())
          .Int(now_ns);
      RETURN_IF_ERROR(query.Execute().status());
    }
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const SetWorkerSecretHashWrite& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(store_internal::ValidateWorkerSecretHash(w.name, w.secret_hash));
    Query query(db_.get(), statements_.set_secret_hash.get(), "set worker secret hash");
    query.Text(w.name).Text(w.secret_hash).Int(absl::ToUnixNanos(w.issue_time));
    RETURN_IF_ERROR(query.Execute().status());
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const DeleteWorkerWrite& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int changed = 0;
    for (sqlite3_stmt* statement :
         {statements_.delete_worker_row.get(), statements_.delete_secret_hash.get()}) {
      Query query(db_.get(), statement, "delete worker");
      query.Text(w.name);
      ASSIGN_OR_RETURN(const int rows, query.Execute());
      changed += rows;
    }
    if (changed == 0) {
      return absl::NotFoundError(absl::StrCat("worker ", w.name, " is not stored"));
    }
    return WriteResult();
  }

  // Runs each of `statements` (a DELETE binding ?1 to `name`) in one
  // transaction, rolled back on error; returns the rows each changed.
  // `write` in one transaction: all of it durable, or none of it kept.
  absl::Status InTransactionLocked(const char* what, const std::function<absl::Status()>& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(Written(Exec(db_.get(), "BEGIN IMMEDIATE", what)));
    absl::Status status = write();
    if (status.ok()) status = Exec(db_.get(), "COMMIT", what);
    if (!status.ok()) {
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      return Written(status);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<int>> DeleteLocked(std::initializer_list<sqlite3_stmt*> statements,
                                                absl::string_view name, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(Written(Exec(db_.get(), "BEGIN IMMEDIATE", what)));
    std::vector<int> changed;
    absl::Status status = absl::OkStatus();
    for (sqlite3_stmt* statement : statements) {
      Query query(db_.get(), statement, what);
      query.Text(name);
      absl::StatusOr<int> rows = query.Execute();
      status = rows.status();
      if (!status.ok()) break;
      changed.push_back(*rows);
    }
    if (status.ok()) status = Exec(db_.get(), "COMMIT", what);
    if (!status.ok()) {
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
      return Written(status);
    }
    return changed;
  }

  // `status` of a write, with a full file system named: SQLite's "database
  // or disk is full" alone does not say which disk, nor that the write was
  // refused whole. Any other status is returned as it is.
  absl::Status Written(absl::Status status) const {
    if (!absl::IsResourceExhausted(status)) return status;
    return absl::ResourceExhaustedError(absl::StrCat(
        "store ", path_, " is full: no space left on its file system, nothing "
        "was written (", status.message(), ")"));
  }

  // `read(db, statements)` on the read connection, or on the writer's.
  template <typename F>
  std::invoke_result_t<F, sqlite3*, const Statements&> Read(F read) ABSL_LOCKS_EXCLUDED(mu_) {
    if (reader_ == nullptr) {
      absl::MutexLock lock(&mu_);
      return read(db_.get(), statements_);
    }
    absl::MutexLock lock(&reader_->mu);
    return read(reader_->db.get(), reader_->statements);
  }

  absl::StatusOr<v1::Run> GetRunLocked(absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return GetRunWith(db_.get(), statements_, name);
  }

  absl::StatusOr<v1::Run> FindRunByRequestIdLocked(absl::string_view request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return FindRunByRequestIdWith(db_.get(), statements_, request_id);
  }

  // AlreadyExists if another run than `run` holds its (non-empty) request id.
  absl::Status CheckRequestIdFree(const v1::Run& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (run.request_id().empty()) return absl::OkStatus();
    absl::StatusOr<v1::Run> holder = FindRunByRequestIdLocked(run.request_id());
    if (absl::IsNotFound(holder.status())) return absl::OkStatus();
    if (!holder.ok()) return holder.status();
    if (holder->name() == run.name()) return absl::OkStatus();
    return absl::AlreadyExistsError(
        absl::StrCat("request_id \"", run.request_id(),
                     "\" is already used by run ", holder->name()));
  }

  // Every row of `query`, which selects (spec, data) first, as runs.
  static absl::StatusOr<std::vector<v1::Run>> ReadRuns(Query& query) {
    std::vector<v1::Run> runs;
    while (true) {
      ASSIGN_OR_RETURN(const bool row, query.Step());
      if (!row) return runs;
      ASSIGN_OR_RETURN(v1::Run run, ReadRun(query));
      runs.push_back(std::move(run));
    }
  }

  // Every row of `query`, whose first column is a serialized Message.
  template <typename Message>
  static absl::StatusOr<std::vector<Message>> ReadAll(Query& query,
                                                      absl::string_view what) {
    std::vector<Message> messages;
    while (true) {
      ASSIGN_OR_RETURN(const bool row, query.Step());
      if (!row) return messages;
      RETURN_IF_ERROR(query.ColumnProto(0, &messages.emplace_back(), what));
    }
  }

  const std::string path_;
  absl::Mutex mu_;
  // Declared before the statements: they are finalized before it closes.
  const ConnectionPtr db_ ABSL_GUARDED_BY(mu_);
  const Statements statements_ ABSL_GUARDED_BY(mu_);
  const std::unique_ptr<ReadConnection> reader_;
};

// The parent folder of `path`, created if missing, so `--store
// /var/lib/collbench/store.db` works on a fresh volume.
absl::Status CreateParentDirectory(const std::string& path) {
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  std::error_code error;
  if (parent.empty() || std::filesystem::is_directory(parent, error)) {
    return absl::OkStatus();
  }
  std::filesystem::create_directories(parent, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", parent.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path) {
  RETURN_IF_ERROR(CreateParentDirectory(path));
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  ConnectionPtr db(raw);  // Closes it on every error below.
  if (rc != SQLITE_OK) return SqliteError(db.get(), rc, "open");
  RETURN_IF_ERROR(Configure(db.get()));
  RETURN_IF_ERROR(Migrate(db.get()));
  ASSIGN_OR_RETURN(Statements statements, PrepareStatements(db.get()));
  std::unique_ptr<ReadConnection> reader;
  if (path != ":memory:") {  // another connection would open another database
    reader = std::make_unique<ReadConnection>();
    sqlite3* raw_reader = nullptr;
    const int read_rc = sqlite3_open_v2(path.c_str(), &raw_reader,
                                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    reader->db.reset(raw_reader);
    if (read_rc != SQLITE_OK) return SqliteError(reader->db.get(), read_rc, "open for reading");
    RETURN_IF_ERROR(Configure(reader->db.get()));
    ASSIGN_OR_RETURN(reader->statements, PrepareStatements(reader->db.get()));
  }
  return std::make_unique<SqliteStore>(path, std::move(db), std::move(statements),
                                       std::move(reader));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(
    const std::string& path) {
  absl::StatusOr<std::unique_ptr<Store>> store = Open(path);
  if (store.ok()) return store;
  return absl::Status(
      store.status().code(),
      absl::StrCat("store ", path, ": ", store.status().message()));
}

}  // namespace collbench

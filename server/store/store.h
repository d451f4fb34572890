// SPDX-License-Identifier: Apache-2.0
// The coordinator's persistent state: workers, runs and per-size results
// (docs/design/store.md, docs/design/run-lifecycle.md#results-and-durability).
//
// Two implementations share one contract: NewMemoryStore() is the fake for
// tests, OpenSqliteStore() is what the coordinator runs on. A PostgreSQL
// store can follow behind the same interface.
//
// Thread safety: every method may be called from any thread at any time;
// implementations lock internally. Each call is atomic: a concurrent reader
// sees a run, result or worker either before or after a write, never half.
//
// Ownership: every method takes its arguments by reference for the duration
// of the call and returns copies; the store keeps no pointer to caller data.
#ifndef COLLBENCH_SERVER_STORE_STORE_H_
#define COLLBENCH_SERVER_STORE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collbench/v1/baseline.pb.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/schedule.pb.h"
#include "collbench/v1/worker.pb.h"
#include "collbench/v1/workflow.pb.h"

namespace collbench {

// The coordinator's persistent state; see the file comment for threading.
class Store {
 public:
  // One page of ListRuns.
  struct RunPage {
    std::vector<v1::Run> runs;
    // Pass to the next ListRuns call (with the same state filter) to get the
    // following page; empty when this page is the last.
    std::string next_page_token;
  };

  // Runs per page when the caller asks for 0, and the most ever returned.
  static constexpr int kDefaultPageSize = 50;
  static constexpr int kMaxPageSize = 1000;

  virtual ~Store() = default;

  // ---- Runs ----------------------------------------------------------------
  // A run is keyed by `name()` ("runs/{id}", chosen by the caller) and, when
  // `request_id()` is not empty, also by its request id (CreateRun's
  // idempotency key). ListRuns orders by `create_time()`, so callers set it
  // before CreateRun.

  // Stores a new run.
  // InvalidArgument unless the name is "runs/{id}" with a non-empty id;
  // AlreadyExists if a run with that name, or another run with the same
  // non-empty request id, is already stored.
  absl::Status CreateRun(const v1::Run& run) { return CommitOne(CreateRunWrite{run}); }

  // Replaces every field of the stored run named `run.name()` (a field left
  // unset in `run` is cleared). NotFound naming the run if none is stored;
  // AlreadyExists if the request id is changed to one another run holds.
  absl::Status UpdateRun(const v1::Run& run) {
    return CommitOne(UpdateRunWrite{run, /*with_progress=*/true});
  }

  // UpdateRun, except that the run's progress (sizes_done, wrong) stays as
  // stored: AddResults owns it from then on. The coordinator saves a run's
  // state with this while results of it are being written, so a state
  // change never writes back an older count.
  absl::Status UpdateRunExceptProgress(const v1::Run& run) {
    return CommitOne(UpdateRunWrite{run, /*with_progress=*/false});
  }

  // The run named `name`; NotFound naming it if none is stored.
  virtual absl::StatusOr<v1::Run> GetRun(absl::string_view name) = 0;

  // The run created with `request_id`; NotFound if none (or if empty).
  virtual absl::StatusOr<v1::Run> FindRunByRequestId(
      absl::string_view request_id) = 0;

  // Runs newest first: by create_time descending, then name descending, so
  // the order is total and stable while runs are added.
  // `page_size` 0 means kDefaultPageSize; larger than kMaxPageSize is capped;
  // negative is InvalidArgument. `page_token` is empty for the first page,
  // else a `next_page_token` returned by an earlier call: it encodes the last
  // run's position, so paging neither repeats nor skips a run even when runs
  // are created meanwhile (new ones sort before the token and are not
  // returned). A malformed token, or one from a call with another `state`,
  // is InvalidArgument. `state` filters unless RUN_STATE_UNSPECIFIED.
  virtual absl::StatusOr<RunPage> ListRuns(int page_size,
                                           absl::string_view page_token,
                                           v1::RunState state) = 0;

  // Runs not in a final state (QUEUED, SCHEDULED, RUNNING), oldest first:
  // what a restarted coordinator re-queues or waits to re-adopt.
  virtual absl::StatusOr<std::vector<v1::Run>> ListUnfinishedRuns() = 0;

  // A finished run's place in time, for retention.
  struct FinishedRun {
    std::string name;
    int64_t create_time_ns = 0;  // 0 when unset
    int64_t end_time_ns = 0;     // 0 when unset
  };

  // Runs in a final state (SUCCEEDED, FAILED, CANCELLED) in ListRuns order
  // (newest first), without their specs or results: what a retention pass
  // reads, cheaply, however many runs there are.
  virtual absl::StatusOr<std::vector<FinishedRun>> ListFinishedRuns() = 0;

  // Deletes the run and every result of it in one transaction (its request
  // id is free again). NotFound naming it when it is not stored. Whether a
  // run may go is the caller's decision (the coordinator deletes only
  // finished runs, once no result of them is on its way): a result added
  // for it afterwards is refused as for any run not stored.
  virtual absl::Status DeleteRun(absl::string_view name) = 0;

  // ---- Results -------------------------------------------------------------
  // Per-size results of a run, keyed by (run, result.sequence()).

  // Stores `result` for the run named `run` unless a result with the same
  // sequence is already stored for it (a launcher re-sends what it has not
  // seen acked). Returns true if it stored the result, false if it was a
  // duplicate (the stored one is kept unchanged). The run's row is not
  // touched (AddResults also counts the result into the run's progress).
  // Durable when it returns: the caller may ack the worker, and the result
  // survives a crash of the process or the machine right after.
  // NotFound if the run is not stored; InvalidArgument if the sequence is
  // negative.
  virtual absl::StatusOr<bool> AddResult(absl::string_view run,
                                         const v1::SizeResult& result) = 0;

  // One result of AddResults: the run it belongs to ("runs/{id}") and it.
  struct ResultRow {
    std::string run;
    v1::SizeResult result;
  };

  // The coordinator's result path (group commit): stores each row unless a
  // result with its (run, sequence) is stored already (as AddResult), and
  // adds each new one to its run's progress in the same transaction:
  // sizes_done + 1 and wrong + result.wrong(). Returns, per row in order,
  // whether it was new (a later row with the same key is a duplicate).
  // One transaction for all rows: durable when it returns, like AddResult.
  // All or nothing: NotFound naming a run that is not stored,
  // InvalidArgument for a negative sequence, or the write's error (a full
  // disk is ResourceExhausted), and then nothing of it is stored.
  absl::StatusOr<std::vector<bool>> AddResults(const std::vector<ResultRow>& rows);

  // The run's results by ascending sequence; NotFound if the run is not
  // stored (a run without results yields an empty list).
  virtual absl::StatusOr<std::vector<v1::SizeResult>> ListResults(
      absl::string_view run) = 0;

  // ---- Workers -------------------------------------------------------------

  // Stores `worker` under `worker.name()` ("workers/{id}"), replacing any
  // worker of that name. InvalidArgument if the name is malformed.
  absl::Status UpsertWorker(const v1::Worker& worker) { return UpsertWorkers({worker}); }

  // UpsertWorker for each of `workers`, all in one transaction (one fsync
  // for a whole fleet's state change). All or nothing: InvalidArgument if
  // any name is malformed, and then nothing is written.
  absl::Status UpsertWorkers(std::vector<v1::Worker> workers) {
    return CommitOne(UpsertWorkersWrite{std::move(workers)});
  }

  // Every stored worker, by name ascending.
  virtual absl::StatusOr<std::vector<v1::Worker>> ListWorkers() = 0;

  // ---- Worker credentials --------------------------------------------------
  // The hash of each worker's secret (docs/design/security.md#worker-identity)
  // and when it was issued, kept apart from the worker rows: UpsertWorker
  // never touches them. Only hashes are stored; the secret itself exists on
  // the worker alone. The issue time is when the coordinator first admitted
  // the name, the order placement and hunts take workers in
  // (docs/design/run-lifecycle.md#placement-order).
  struct WorkerCredential {
    std::string secret_hash;
    absl::Time issue_time;
  };

  // Records `secret_hash`, issued at `issue_time`, for the worker `name`
  // ("workers/{id}"), replacing any earlier one. Durable when it returns
  // (the coordinator hands the secret out only after this). InvalidArgument
  // if the name is malformed or the hash empty.
  absl::Status SetWorkerSecretHash(absl::string_view name, absl::string_view secret_hash,
                                   absl::Time issue_time) {
    return CommitOne(
        SetWorkerSecretHashWrite{std::string(name), std::string(secret_hash), issue_time});
  }

  // Every stored credential, by worker name.
  virtual absl::StatusOr<std::map<std::string, WorkerCredential>> ListWorkerCredentials() = 0;

  // Forgets the worker: its row and its secret hash (an operator lets the
  // name join anew). NotFound naming it when neither is stored.
  absl::Status DeleteWorker(absl::string_view name) {
    return CommitOne(DeleteWorkerWrite{std::string(name)});
  }

  // ---- Batched writes (the coordinator's journal) --------------------------
  // The writes above as values, so that many can be committed together.
  // Each applies exactly as the method of its name: the same checks, the
  // same errors, the same effect.
  struct CreateRunWrite {
    v1::Run run;
  };
  struct UpdateRunWrite {
    v1::Run run;
    bool with_progress = false;  // UpdateRun; else UpdateRunExceptProgress
  };
  struct AddResultsWrite {
    std::vector<ResultRow> rows;
  };
  struct UpsertWorkersWrite {
    std::vector<v1::Worker> workers;
  };
  struct SetWorkerSecretHashWrite {
    std::string name;
    std::string secret_hash;
    absl::Time issue_time;
  };
  struct DeleteWorkerWrite {
    std::string name;
  };
  using Write = std::variant<CreateRunWrite, UpdateRunWrite, AddResultsWrite, UpsertWorkersWrite,
                             SetWorkerSecretHashWrite, DeleteWorkerWrite>;
  // What one write did: for an AddResultsWrite, per row in order, whether
  // it was new (as AddResults returns); empty for the others.
  struct WriteResult {
    std::vector<bool> inserted;
  };

  // Applies `writes` in order in one transaction: durable together when it
  // returns OK (one fsync for all), or none of them kept. The first write
  // that its method would refuse refuses the batch with that method's
  // error; a failure of the store itself (a full disk: ResourceExhausted)
  // likewise. A later write sees the earlier ones (a run created by write 0
  // may be updated by write 1). An empty batch is OK and writes nothing.
  virtual absl::StatusOr<std::vector<WriteResult>> Commit(const std::vector<Write>& writes) = 0;

  // ---- Workflows -----------------------------------------------------------
  // Keyed by `name()` ("workflows/{id}"). Workflows are few (a person or a
  // portal makes them, each of many runs), so the coordinator reads them
  // all once at start and writes each change through.

  // Stores `workflow`, replacing any workflow of that name (its report, if
  // any, is kept). Durable when it returns. InvalidArgument unless the name
  // is "workflows/{id}" with a non-empty id.
  virtual absl::Status PutWorkflow(const v1::Workflow& workflow) = 0;

  // Stores a change of one cell: the workflow's own fields from `head`
  // (its cells are not read) and cell `index` from `cell`, the other cells
  // as last stored; so that a cell's change writes that cell and not every
  // cell again (docs/design/store.md#the-sqlite-store). Durable when it returns.
  // NotFound when the workflow is not stored.
  // REQUIRES: the stored workflow has a cell `index`.
  virtual absl::Status PutWorkflowCell(const v1::Workflow& head, int index,
                                       const v1::WorkflowCell& cell) = 0;

  // Every stored workflow, newest first (create_time descending, then name).
  virtual absl::StatusOr<std::vector<v1::Workflow>> ListWorkflows() = 0;

  // The HTML page of a report workflow, kept apart from its row (pages are
  // large; listings never read them). NotFound when the workflow is not
  // stored (PutWorkflowReport) or has no page (GetWorkflowReport).
  virtual absl::Status PutWorkflowReport(absl::string_view name, const std::string& html) = 0;
  virtual absl::StatusOr<std::string> GetWorkflowReport(absl::string_view name) = 0;

  // Deletes the workflow and its page; its runs stay. NotFound naming it
  // when it is not stored.
  virtual absl::Status DeleteWorkflow(absl::string_view name) = 0;

  // ---- Baselines and schedules (docs/design/workflows.md) ------------------
  // Keyed by `name()` ("baselines/{id}", "schedules/{id}"). Put replaces a
  // stored one of that name and is durable when it returns; InvalidArgument
  // for a malformed name. Get and Delete: NotFound naming it.
  virtual absl::Status PutBaseline(const v1::Baseline& baseline) = 0;
  virtual absl::StatusOr<v1::Baseline> GetBaseline(absl::string_view name) = 0;
  // Every baseline by name, entries included.
  virtual absl::StatusOr<std::vector<v1::Baseline>> ListBaselines() = 0;
  virtual absl::Status DeleteBaseline(absl::string_view name) = 0;

  virtual absl::Status PutSchedule(const v1::Schedule& schedule) = 0;
  // Every schedule by name.
  virtual absl::StatusOr<std::vector<v1::Schedule>> ListSchedules() = 0;
  virtual absl::Status DeleteSchedule(absl::string_view name) = 0;

 private:
  // Commit({write}).
  absl::Status CommitOne(Write write);
};

// An empty store in memory: the fake for tests. Never fails except on
// contract violations.
std::unique_ptr<Store> NewMemoryStore();

// Opens the SQLite database at `path`, creating the file (and its parent
// directory) when absent and migrating an older schema to the current one.
// Durability: WAL journal, fsync on every commit, so an OK from any write
// means the data survives `kill -9` of the coordinator and a power loss.
// Several stores (or processes) may open one file; writers wait for each
// other up to a busy timeout, then fail with Unavailable.
// A write refused because the file system is full is ResourceExhausted
// naming the file ("store PATH is full: ..."); nothing of it is kept, reads
// go on, and writes work again once there is space.
// FailedPrecondition if the file was written by a newer schema; an error
// naming the path if it cannot be opened or is not a database.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_STORE_STORE_H_

// SPDX-License-Identifier: Apache-2.0
// The coordinator's workflows (workflow.proto): created over gRPC or REST,
// planned and checked in full at create time (workflow_plan.h), then run
// here, not by the client: one cell at a time through the runs
// (workflow_runs.h), so a workflow never holds more hardware than one run
// and user runs queue beside it in the same FIFO; its progress kept in the
// store after every change, its output rendered when its last cell ends.
//
// Driven by events (docs/design/workflows.md#execution-and-restarts): a
// workflow that holds one of the `max_running` slots subscribes to the run
// of its cell in progress; the run's state changes (and the coordinator's
// Tick, for what no run event tells: workers becoming idle, a refused
// create's retry, a hunt's queued runs whose workers are lost) wake it,
// and the executor's threads advance it as far as it can go without
// waiting: create the next run, take a cell's end, render the output. No
// thread waits on a run; time comes from the injected Clock.
//
// Restarts: every change is written through, and a cell's run is created
// with the request id "<workflow>/cell-<i>", so a workflow that was running
// when the coordinator stopped is picked up again by Start() and goes on
// with the cell it was at, adopting the run it had already created.
//
// Watchers (WatchWorkflow, the REST event stream, the CLI) get the
// workflow after each change; Subscribe() hands out the current one and
// registers in one step, so nothing falls between the two.
//
// Thread safety: every public method may be called from any thread, with
// none of the manager's locks held. One mutex guards the workflows;
// workflow sinks are called with it held and must not call back into the
// manager. The runs are called without it. A workflow is advanced by one
// executor thread at a time.
#ifndef COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_MANAGER_H_
#define COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_MANAGER_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/run_set.h"
#include "collbench/v1/workflow.pb.h"
#include "common/clock.h"
#include "common/executor.h"
#include "server/core/request_bounds.h"
#include "server/core/retention.h"
#include "server/store/store.h"
#include "server/workflows/baselines.h"
#include "server/workflows/hunts.h"
#include "server/workflows/workflow_runs.h"

namespace collbench {

struct WorkflowManagerOptions {
  int max_running = 2;   // workflows executed at once (each runs one cell at a time)
  int max_queued = 100;  // beyond this many waiting, Create is ResourceExhausted
  int threads = 2;       // the executor's, which advance workflows when woken
  // Ended workflows kept (--retain-workflows, --retain-workflows-for):
  // retention.h's rule, `keep_runs` counting workflows; inactive: all.
  RetentionPolicy retention;
};

class WorkflowSink {
 public:
  virtual ~WorkflowSink() = default;
  // The workflow after a change; the last call has it in a final state.
  virtual void OnWorkflow(const v1::Workflow& workflow) = 0;
  // No more calls follow (it ended, was deleted, or the manager stops).
  virtual void OnEnd() = 0;
};

// What the manager keeps of a workflow while it holds a slot
// (workflow_execution.h).
struct WorkflowExecution;
struct HuntExecution;

class WorkflowManager {
 public:
  // None of the pointers is owned; all outlive the manager. `executor`
  // advances the workflows (null: a pool of `options.threads` threads); the
  // manager owns it and shuts it down in Stop(). `bounds` bounds the cells
  // of a workflow and the runs one names (null: the manager's own, of the
  // default RequestBoundOptions).
  WorkflowManager(Store* store, WorkflowRuns* runs, const Clock* clock,
                  WorkflowManagerOptions options, std::unique_ptr<Executor> executor = nullptr,
                  RequestBounds* bounds = nullptr);
  ~WorkflowManager();  // Stop()

  // Loads the stored workflows, queues those that had not ended, and
  // starts the first `max_running` of them. Call once, after the runs have
  // recovered.
  absl::Status Start();
  // Stops advancing workflows (what an executor thread is doing is
  // finished first); a workflow in progress stays RUNNING in the store and
  // the next Start goes on with it. Watchers are ended. Idempotent.
  void Stop();
  // The coordinator's tick: wakes the workflows that wait for time rather
  // than for a run's event. Returns at once; the work is the executor's.
  void Tick(absl::Time now);

  // Checks and plans (InvalidArgument naming the field; nothing stored),
  // stores it QUEUED and queues it. The same non-empty request_id returns
  // the same workflow for the same spec, AlreadyExists for another.
  absl::StatusOr<v1::Workflow> Create(const v1::CreateWorkflowRequest& request, absl::Time now,
                                      absl::string_view caller = "");
  absl::StatusOr<v1::Workflow> Get(absl::string_view name);
  struct Page {
    std::vector<v1::Workflow> workflows;
    std::string next_page_token;
  };
  // Newest first. `filter`: "" or "kind=KIND" or "state=STATE".
  absl::StatusOr<Page> List(int page_size, absl::string_view page_token,
                            absl::string_view filter);
  // Cancels a queued or running workflow and the run of it in progress.
  // FailedPrecondition when it has ended.
  absl::StatusOr<v1::Workflow> Cancel(absl::string_view name, absl::Time now);
  // Forgets a finished workflow (its runs stay). FailedPrecondition while
  // it is queued or running.
  absl::Status Delete(absl::string_view name);
  // The workflow's page: a report workflow's stored one, or rendered now
  // from the runs of its cells (or its selection).
  absl::StatusOr<v1::WorkflowReport> Report(absl::string_view name);

  // The baselines (baselines.h): made of runs or of a workflow's runs,
  // checked against by check workflows and by matrices and suites with
  // spec.baseline.
  Baselines* baselines() { return &baselines_; }

  // What a request may ask (request_bounds.h) and its refusals' counts.
  RequestBounds& bounds() { return *bounds_; }

  // The workflow now; `sink` then gets every later version until it ends.
  // A workflow that has ended is returned and `sink` is not kept.
  absl::StatusOr<v1::Workflow> Subscribe(absl::string_view name,
                                         std::shared_ptr<WorkflowSink> sink);
  void Unsubscribe(const std::string& name, const WorkflowSink* sink);

  // Deletes the ended workflows (their pages with them; their runs stay)
  // that options.retention does not keep at `now`, except one that ended
  // within the last ten minutes (a schedule reads its firing's outcome
  // first); returns their names. Nothing when the policy is not active.
  std::vector<std::string> SweepRetention(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Workflows not ended, for metrics.
  int active_count();

 private:
  class Waker;
  class RunSink;
  // What AdvanceCells does next (workflow_cells.cc).
  struct CellStep;

  // "workflows/ID" from "ID" or "workflows/ID".
  static std::string NameOf(absl::string_view text);
  std::string NewId(const std::string& kind, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // The checks and the plan of Create, into `workflow` (workflow_create.cc).
  absl::Status Plan(const v1::WorkflowSpec& spec, const std::string& id,
                    v1::Workflow* workflow) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckBaselineOptions(const v1::WorkflowSpec& spec);
  // The workflow that `request_id` was used for, AlreadyExists for another
  // spec, NotFound when it is new.
  absl::StatusOr<v1::Workflow> SameRequestLocked(const v1::CreateWorkflowRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- Execution (workflow_execution.cc) -----------------------------------
  // Moves queued workflows into free slots; returns their names, to wake.
  std::vector<std::string> StartQueuedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Has the executor advance `name` (again, if it is being advanced now).
  void Wake(const std::string& name) ABSL_LOCKS_EXCLUDED(wake_mu_);
  // Advance, repeated while wakes came in meanwhile.
  void AdvanceWhileWoken(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_, wake_mu_);
  // One step of the workflow as far as it goes without waiting.
  void Advance(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  // The next Tick at or after `at` wakes the workflow.
  void WakeAt(const std::string& name, absl::Time at) ABSL_LOCKS_EXCLUDED(mu_);
  // Subscribes to `run`'s events for the workflow (once); Unwatch ends it.
  void Watch(const std::string& name, const std::string& run) ABSL_LOCKS_EXCLUDED(mu_);
  void Unwatch(const std::string& name, const std::string& run) ABSL_LOCKS_EXCLUDED(mu_);
  bool StoppingOrGone(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  bool Cancelling(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  // Applies `change` to the workflow and saves it (no-op when it is gone);
  // `changed_cell` as SaveLocked's.
  void Update(const std::string& name, const std::function<void(v1::Workflow&)>& change,
              int changed_cell = -1) ABSL_LOCKS_EXCLUDED(mu_);
  // Final state, output (below the plan's header) and end time; frees the
  // slot, ends the workflow's run subscriptions and starts the next queued.
  void Finish(const std::string& name, v1::WorkflowState state, const std::string& error,
              const v1::WorkflowOutput& output) ABSL_LOCKS_EXCLUDED(mu_);

  // --- Cells of matrices, suites and sweeps (workflow_cells.cc) ------------
  void AdvanceCells(const std::string& name);
  CellStep NextCell(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  // Creates cell `index`'s run; false when it waits for the tick.
  bool CreateCellRun(const std::string& name, int index, const v1::RunSpec& spec);
  // Takes the run's state into its cell; true once the cell has ended.
  bool FollowCellRun(const std::string& name, int index, const std::string& run);
  // The output, the check against spec.baseline, and the final state.
  void FinishCells(const std::string& name);
  // Advice, report and check workflows: no runs of their own.
  void ExecuteSelection(const std::string& name, const v1::Workflow& snapshot);

  // --- Hunts (workflow_hunt.cc) ---------------------------------------------
  void AdvanceHunt(const std::string& name, const v1::Workflow& snapshot, HuntExecution* hunt);
  // The next round to run, moving through the phases; nullopt when none is
  // left.
  std::optional<workflows::HuntRound> NextHuntRound(const std::string& name, HuntExecution* hunt);
  // The round's cells, stored; its runs then follow.
  void OpenRound(const std::string& name, HuntExecution* hunt, workflows::HuntRound planned);
  // Creates what of the round is not yet created (one group), then takes
  // the runs' states; true once every run of the round has ended.
  bool AdvanceRound(const std::string& name, HuntExecution* hunt);
  void CreateRoundRuns(const std::string& name, HuntExecution* hunt);
  bool FollowRoundRuns(const std::string& name, HuntExecution* hunt);
  // A round's run as it is now; a QUEUED one that waits for a lost worker is
  // cancelled first when `may_cancel`. nullopt when it is gone.
  std::optional<v1::Run> LookAtRoundRun(const std::string& run, bool may_cancel);
  // The round's measurements, into the phase's list.
  void CloseRound(const std::string& name, HuntExecution* hunt);
  void SetCellsTotal(const std::string& name, int runs);
  void FinishHunt(const std::string& name, const v1::Workflow& snapshot, HuntExecution* hunt);
  // Marks the CONFIRMED_BAD suspects SUSPECT and clears SUSPECT workers
  // measured healthy, recording both in `hunt`.
  void Quarantine(const std::string& name, const v1::HuntSpec& spec, v1::HuntOutput* hunt);

  // --- Reading runs ---------------------------------------------------------
  // The runs an advice, report or check workflow is about (REQUIRES:
  // `spec` is one); the error names the field of the selection that is
  // wrong.
  absl::StatusOr<std::vector<std::string>> SelectedRuns(const v1::WorkflowSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Stores and publishes the workflow after a change (version + 1). When
  // only its cell `changed_cell` (>= 0) and its own fields changed, only
  // they are written (Store::PutWorkflowCell): a workflow's run costs its
  // cells once each, not every cell at every change.
  void SaveLocked(v1::Workflow& workflow, int changed_cell = -1) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Workflow* FindLocked(absl::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  WorkflowRuns* const runs_;
  const Clock* const clock_;
  const WorkflowManagerOptions options_;
  std::unique_ptr<RequestBounds> own_bounds_;  // when none was given
  RequestBounds* const bounds_;
  Baselines baselines_;

  absl::Mutex mu_;
  std::map<std::string, v1::Workflow, std::less<>> workflows_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // waiting for a slot
  // Those holding a slot.
  std::map<std::string, std::unique_ptr<WorkflowExecution>> executing_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelling_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::shared_ptr<WorkflowSink>>> sinks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex id_mu_;
  absl::BitGen id_bits_ ABSL_GUARDED_BY(id_mu_);

  // Which workflows are posted to the executor or being advanced, and which
  // of those were woken again meanwhile. Taken after mu_, never before.
  absl::Mutex wake_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::set<std::string> advancing_ ABSL_GUARDED_BY(wake_mu_);
  std::set<std::string> woken_again_ ABSL_GUARDED_BY(wake_mu_);
  // What the runs' event sinks hold: detached in Stop(), so a late event
  // wakes nothing.
  std::shared_ptr<Waker> waker_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_MANAGER_H_

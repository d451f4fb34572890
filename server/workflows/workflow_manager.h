// SPDX-License-Identifier: Apache-2.0
// The coordinator's workflows (workflow.proto): created over gRPC or REST,
// planned and checked in full at create time (workflow_plan.h), then run
// here, not by the client: one cell at a time through the RunManager (so a
// workflow never holds more hardware than one run, and user runs queue
// beside it in the same FIFO), its progress kept in the store after every
// change, its output rendered when its last cell ends.
//
// Restarts: every change is written through, and a cell's run is created
// with the request id "<workflow>/cell-<i>", so a workflow that was running
// when the coordinator stopped is picked up again by Recover() and goes on
// with the cell it was at, adopting the run it had already created.
//
// Watchers (WatchWorkflow, the REST event stream, the CLI) get the
// workflow after each change; Subscribe() hands out the current one and
// registers in one step, so nothing falls between the two.
//
// Thread safety: every public method may be called from any thread. One
// mutex guards the workflows; sinks are called with it held and must not
// call back into the manager. `max_running` threads execute workflows.
#ifndef COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_MANAGER_H_
#define COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_MANAGER_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/run_set.h"
#include "api/convert.h"
#include "collbench/v1/workflow.pb.h"
#include "server/core/fleet.h"
#include "server/core/run_manager.h"
#include "server/store/store.h"
#include "server/workflows/hunts.h"

namespace collbench {

struct WorkflowManagerOptions {
  int max_running = 2;   // workflows executed at once (each runs one cell at a time)
  int max_queued = 100;  // beyond this many waiting, Create is ResourceExhausted
  // How often a running cell's run is looked at.
  absl::Duration poll_interval = absl::Milliseconds(100);
};

class WorkflowSink {
 public:
  virtual ~WorkflowSink() = default;
  // The workflow after a change; the last call has it in a final state.
  virtual void OnWorkflow(const v1::Workflow& workflow) = 0;
  // No more calls follow (it ended, was deleted, or the manager stops).
  virtual void OnEnd() = 0;
};

class WorkflowManager {
 public:
  // None of the pointers is owned; all outlive the manager.
  WorkflowManager(Store* store, RunManager* runs, Fleet* fleet, WorkflowManagerOptions options);
  ~WorkflowManager();  // Stop()

  // Loads the stored workflows, queues those that had not ended, and
  // starts the executing threads. Call once, after RunManager::Recover.
  absl::Status Start();
  // Ends the threads; a workflow in progress stays RUNNING in the store
  // (the next Start goes on with it). Watchers are ended. Idempotent.
  void Stop();

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

  // Baselines (docs/design/workflows.md#baselines-and-checks): made from ended
  // runs, or a workflow's runs; kept in the store; checked against by check
  // workflows and by matrices and suites with spec.baseline. Create:
  // InvalidArgument naming the field (a bad id, an unknown run, no result with
  // a histogram), AlreadyExists unless `replace`.
  absl::StatusOr<v1::Baseline> CreateBaseline(const v1::CreateBaselineRequest& request,
                                              absl::Time now, absl::string_view caller);
  absl::StatusOr<v1::Baseline> GetBaseline(absl::string_view name);
  // By name, without their entries (entries_total says how many).
  absl::StatusOr<std::vector<v1::Baseline>> ListBaselines();
  absl::Status DeleteBaseline(absl::string_view name);

  // The regression threshold of a schedule's checks (0: the default), by
  // schedule name; the ScheduleManager sets it. A schedule's firings are
  // matrices or suites with a baseline, whose spec carries no threshold.
  void SetScheduleThresholds(std::function<double(const std::string& schedule)> thresholds)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    schedule_threshold_ = std::move(thresholds);
  }

  // The workflow now; `sink` then gets every later version until it ends.
  // A workflow that has ended is returned and `sink` is not kept.
  absl::StatusOr<v1::Workflow> Subscribe(absl::string_view name,
                                         std::shared_ptr<WorkflowSink> sink);
  void Unsubscribe(const std::string& name, const WorkflowSink* sink);

  // Workflows not ended, for metrics.
  int active_count();

 private:
  // "workflows/ID" from "ID" or "workflows/ID".
  static std::string NameOf(absl::string_view text);
  void Loop();
  void Execute(const std::string& name);
  // Creates and follows cell `index`'s run; false when the workflow is
  // being cancelled or the manager stops.
  bool RunCell(const std::string& name, int index);
  // A hunt (workflow_hunt.cc): its survey rounds, re-test rounds, verdicts
  // and quarantine.
  void ExecuteHunt(const std::string& name, const v1::Workflow& snapshot);
  // Creates every run of `planned` (the workflow's cells become them), and
  // follows them until all ended; `ended` gets each run with its results,
  // in `planned`'s order. False when the workflow is being cancelled or the
  // manager stops.
  bool RunHuntRound(const std::string& name, int round, const workflows::HuntRound& planned,
                    std::vector<RunWithResults>* ended);
  // RunHuntRound's parts: the cells' runs created (an entry "" for a cell
  // not accepted), then followed until every one ended (false when the
  // manager stops).
  std::vector<std::string> CreateRoundRuns(const std::string& name, int round);
  bool FollowRoundRuns(const std::string& name, const std::vector<std::string>& runs);
  // A round's run as it is now; a QUEUED one that waits for a lost worker is
  // cancelled first when `may_cancel`. nullopt when it is gone.
  std::optional<v1::Run> LookAtRoundRun(const std::string& run, bool may_cancel);
  // Marks the CONFIRMED_BAD suspects SUSPECT and clears SUSPECT workers
  // measured healthy, recording both in `hunt`.
  void Quarantine(const std::string& name, v1::HuntOutput* hunt);
  v1::HuntSpec FindSpecHunt(const std::string& name);
  // The runs an advice or report workflow is about (REQUIRES: `spec` is
  // one); the error names the field of the selection that is wrong.
  absl::StatusOr<std::vector<std::string>> SelectedRuns(const v1::WorkflowSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<RunWithResults> FetchRuns(const std::vector<std::string>& names);
  // The stored baseline a spec names; InvalidArgument naming `field` when
  // the name is malformed or unknown.
  absl::StatusOr<v1::Baseline> FindBaseline(const std::string& text, absl::string_view field);
  // `runs` checked against the baseline: the check and its table added to
  // `output`.
  absl::Status AddCheck(const std::string& baseline, const std::vector<RunWithResults>& runs,
                        double threshold, double alpha, v1::WorkflowOutput* output);
  std::vector<std::string> CellRuns(const v1::Workflow& workflow) const;
  void Finish(const std::string& name, v1::WorkflowState state, const std::string& error,
              const v1::WorkflowOutput& output, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Stores and publishes the workflow after a change (version + 1).
  void SaveLocked(v1::Workflow& workflow) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Workflow* FindLocked(absl::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool StopOrCancelLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  RunManager* const runs_;
  Fleet* const fleet_;
  const WorkflowManagerOptions options_;

  absl::Mutex mu_;
  absl::Mutex baselines_mu_;
  std::function<double(const std::string&)> schedule_threshold_ ABSL_GUARDED_BY(mu_);  // a create or delete of one baseline at a time
  std::map<std::string, v1::Workflow, std::less<>> workflows_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelling_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::shared_ptr<WorkflowSink>>> sinks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_MANAGER_H_

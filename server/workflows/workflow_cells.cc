// SPDX-License-Identifier: Apache-2.0
// WorkflowManager: matrices, suites and sweeps, one cell's run at a time
// (docs/design/workflows.md#execution-and-restarts), and the workflows that
// make no run (advice, report, check). Each Advance goes as far as it can
// without waiting: the cell in progress is looked at, and when its run has
// ended the next cell's run is made; the run's next state change (or the
// tick, for a run that could not be made yet) wakes it again.
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "server/core/run_manager.h"  // kScheduleLabel
#include "server/workflows/run_selection.h"
#include "server/workflows/workflow_manager.h"
#include "server/workflows/workflow_plan.h"

namespace collbench {
namespace {

// How long a create refused for the run queue's length or the create rate
// waits before it is tried again (at the first tick after).
constexpr absl::Duration kRefusedCreateRetry = absl::Seconds(1);

}  // namespace

struct WorkflowManager::CellStep {
  enum Kind { kStop, kCreate, kFollow, kFinish } kind = kStop;
  int index = -1;
  std::string run;   // kFollow
  v1::RunSpec spec;  // kCreate
};

void WorkflowManager::AdvanceCells(const std::string& name) {
  for (;;) {
    const CellStep step = NextCell(name);
    switch (step.kind) {
      case CellStep::kStop:
        return;
      case CellStep::kFinish:
        FinishCells(name);
        return;
      case CellStep::kCreate:
        if (!CreateCellRun(name, step.index, step.spec)) return;
        break;
      case CellStep::kFollow:
        if (!FollowCellRun(name, step.index, step.run)) return;
        break;
    }
  }
}

WorkflowManager::CellStep WorkflowManager::NextCell(const std::string& name) {
  absl::MutexLock lock(&mu_);
  const v1::Workflow* workflow = FindLocked(name);
  if (stopping_ || workflow == nullptr || executing_.count(name) == 0) return {};
  const bool cancelling = cancelling_.count(name) > 0;
  for (int i = 0; i < workflow->cells_size(); ++i) {
    const v1::WorkflowCell& cell = workflow->cells(i);
    // Skipped, ended, or never accepted: done with.
    if (!cell.skipped().empty() || IsFinalRunState(cell.state())) continue;
    if (!cell.run().empty()) return {CellStep::kFollow, i, cell.run(), {}};
    // Cancelled: no new run; it ends once no run of it is going.
    if (cancelling) break;
    return {CellStep::kCreate, i, "", cell.spec()};
  }
  return {CellStep::kFinish, -1, "", {}};
}

bool WorkflowManager::CreateCellRun(const std::string& name, int index, const v1::RunSpec& spec) {
  const absl::Time now = clock_->Now();
  if (spec.labels().contains(kScheduleLabel) && !runs_->WorkersIdle(spec.workers()).ok()) {
    // A scheduled check's run waits for its workers to be idle, so a
    // user's run never waits behind it.
    WakeAt(name, now);
    return false;
  }
  absl::StatusOr<v1::Run> created =
      runs_->CreateRun(spec, absl::StrCat(name, "/cell-", index), now, name);
  if (absl::IsResourceExhausted(created.status())) {  // the queue or the rate: later
    WakeAt(name, now + kRefusedCreateRetry);
    return false;
  }
  const auto record = [&](v1::Workflow& workflow) {
    v1::WorkflowCell& cell = *workflow.mutable_cells(index);
    if (!created.ok()) {
      cell.set_state(v1::FAILED);
      cell.set_error(absl::StrCat("not accepted: ", created.status().message()));
      workflow.set_cells_done(workflow.cells_done() + 1);
      return;
    }
    cell.set_run(created->name());
    cell.set_state(created->state());
  };
  Update(name, record, index);
  return true;  // made (followed next) or failed (the next cell next)
}

bool WorkflowManager::FollowCellRun(const std::string& name, int index, const std::string& run) {
  Watch(name, run);  // first, then read: no change falls between the two
  if (StoppingOrGone(name)) return false;
  // Cancel() cancelled the run it saw; one made since is cancelled here.
  if (Cancelling(name)) (void)runs_->CancelRun(run, clock_->Now());
  const absl::StatusOr<v1::Run> now = runs_->GetRun(run);
  const v1::RunState state = now.ok() ? now->state() : v1::FAILED;
  const std::string error = now.ok() ? now->error() : std::string(now.status().message());
  const bool ended = IsFinalRunState(state);
  {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    if (workflow == nullptr) return false;
    v1::WorkflowCell& cell = *workflow->mutable_cells(index);
    if (cell.state() != state || cell.error() != error) {  // a version per change
      cell.set_state(state);
      cell.set_error(error);
      if (ended) workflow->set_cells_done(workflow->cells_done() + 1);
      SaveLocked(*workflow, index);
    }
  }
  if (ended) Unwatch(name, run);
  return ended;
}

void WorkflowManager::FinishCells(const std::string& name) {
  bool cancelled = false;
  v1::Workflow snapshot;
  {
    absl::MutexLock lock(&mu_);
    cancelled = cancelling_.count(name) > 0;
    snapshot = *FindLocked(name);
  }
  const std::vector<RunWithResults> runs =
      workflows::FetchRuns(*runs_, workflows::CellRuns(snapshot));
  v1::WorkflowOutput output = workflows::RenderOutput(snapshot, runs);
  std::string check_error;
  if (!cancelled && !snapshot.spec().baseline().empty()) {
    // A check that cannot be made (the baseline deleted since, no run with
    // results) fails the workflow: its runs are kept, and a later check
    // workflow over them can be made.
    if (absl::Status checked = baselines_.Check(snapshot.spec().baseline(), runs,
                                                snapshot.spec().baseline_threshold(), 0, &output);
        !checked.ok()) {
      check_error = absl::StrCat("check against ", snapshot.spec().baseline(), ": ",
                                 checked.message());
    }
  }
  int failed = 0;
  std::string first_failure;
  for (const v1::WorkflowCell& cell : snapshot.cells()) {
    if (!cell.skipped().empty() || cell.state() == v1::SUCCEEDED) continue;
    if (cell.run().empty() && cancelled) continue;
    ++failed;
    if (first_failure.empty()) {
      first_failure =
          absl::StrCat(cell.label(), ": ", cell.error().empty() ? "not run" : cell.error());
    }
  }
  if (cancelled) {
    Finish(name, v1::WORKFLOW_CANCELLED, "cancelled", output);
  } else if (failed > 0) {
    Finish(name, v1::WORKFLOW_FAILED,
           absl::StrCat(failed, " of ", snapshot.cells_total(), " runs did not succeed (",
                        first_failure, ")"),
           output);
  } else if (!check_error.empty()) {
    Finish(name, v1::WORKFLOW_FAILED, check_error, output);
  } else {
    Finish(name, v1::WORKFLOW_SUCCEEDED, "", output);
  }
}

void WorkflowManager::ExecuteSelection(const std::string& name, const v1::Workflow& snapshot) {
  const v1::WorkflowSpec& spec = snapshot.spec();
  absl::StatusOr<std::vector<std::string>> selected = SelectedRuns(spec);
  if (!selected.ok()) {
    Finish(name, v1::WORKFLOW_FAILED, std::string(selected.status().message()), {});
    return;
  }
  if (spec.has_advice()) {
    Finish(name, v1::WORKFLOW_SUCCEEDED, "",
           workflows::RenderOutput(snapshot, workflows::FetchRuns(*runs_, *selected)));
    return;
  }
  if (spec.has_check()) {
    v1::WorkflowOutput output;
    if (absl::Status checked =
            baselines_.Check(spec.check().baseline(), workflows::FetchRuns(*runs_, *selected),
                             spec.check().threshold(), spec.check().alpha(), &output);
        !checked.ok()) {
      Finish(name, v1::WORKFLOW_FAILED, std::string(checked.message()), {});
      return;
    }
    Finish(name, v1::WORKFLOW_SUCCEEDED, "", output);
    return;
  }
  // A workflow's page is its own (a suite run's tables and plots, which
  // Report() fetches); runs named one by one get the runs' page.
  absl::StatusOr<std::string> html = absl::InternalError("");
  if (!spec.report().workflow().empty()) {
    absl::StatusOr<v1::WorkflowReport> of = Report(spec.report().workflow());
    html = of.ok() ? absl::StatusOr<std::string>(of->html()) : of.status();
  } else {
    html = workflows::RenderReport(snapshot, workflows::FetchRuns(*runs_, *selected));
  }
  absl::Status stored = html.ok() ? bounds_->CheckReportSize(html->size()) : html.status();
  if (stored.ok()) stored = store_->PutWorkflowReport(name, *html);
  if (!stored.ok()) {
    Finish(name, v1::WORKFLOW_FAILED, std::string(stored.message()), {});
    return;
  }
  Finish(name, v1::WORKFLOW_SUCCEEDED, "", workflows::RenderOutput(snapshot, {}));
}

}  // namespace collbench

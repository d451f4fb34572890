// SPDX-License-Identifier: Apache-2.0
// WorkflowManager: the workflows as resources (get, list, cancel, delete,
// their pages and watchers). Creating one is workflow_create.cc; executing
// them workflow_execution.cc, workflow_cells.cc and workflow_hunt.cc.
#include "server/workflows/workflow_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "analysis/report.h"
#include "api/convert.h"
#include "common/log.h"
#include "server/workflows/run_selection.h"
#include "server/workflows/workflow_execution.h"
#include "server/workflows/workflow_plan.h"

namespace collbench {

WorkflowManager::WorkflowManager(Store* store, WorkflowRuns* runs, const Clock* clock,
                                 WorkflowManagerOptions options,
                                 std::unique_ptr<Executor> executor, RequestBounds* bounds)
    : store_(store),
      runs_(runs),
      clock_(clock),
      options_(options),
      own_bounds_(bounds == nullptr ? std::make_unique<RequestBounds>() : nullptr),
      bounds_(bounds == nullptr ? own_bounds_.get() : bounds),
      baselines_(store, runs, [this](absl::string_view name) { return Get(name); }, bounds_),
      waker_(std::make_shared<Waker>(this)),
      executor_(executor != nullptr ? std::move(executor)
                                    : NewThreadPool(std::max(options.threads, 1))) {}

WorkflowManager::~WorkflowManager() { Stop(); }

std::string WorkflowManager::NameOf(absl::string_view text) {
  return absl::StartsWith(text, "workflows/") ? std::string(text)
                                              : absl::StrCat("workflows/", text);
}

std::string WorkflowManager::NewId(const std::string& kind, absl::Time now) {
  absl::MutexLock lock(&id_mu_);
  return absl::StrFormat("%s-%s-%04x", kind,
                         absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()),
                         absl::Uniform<uint32_t>(id_bits_, 0, 0x10000));
}

absl::StatusOr<v1::Workflow> WorkflowManager::Get(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  v1::Workflow* workflow = FindLocked(name);
  if (workflow == nullptr) {
    return absl::NotFoundError(absl::StrCat("workflow ", NameOf(name), " not found"));
  }
  return *workflow;
}

absl::StatusOr<WorkflowManager::Page> WorkflowManager::List(int page_size,
                                                            absl::string_view page_token,
                                                            absl::string_view filter) {
  if (page_size < 0) return absl::InvalidArgumentError("page_size: must not be negative");
  if (page_size == 0) page_size = Store::kDefaultPageSize;
  page_size = std::min(page_size, Store::kMaxPageSize);
  std::string kind, state;
  if (!filter.empty()) {
    if (absl::ConsumePrefix(&filter, "kind=")) {
      kind = std::string(filter);
      if (kind != "matrix" && kind != "suite" && kind != "sweep" && kind != "advice" &&
          kind != "report" && kind != "check" && kind != "hunt") {
        return absl::InvalidArgumentError(absl::StrCat(
            "filter: unknown kind '", kind,
            "' (matrix, suite, sweep, advice, report, check, hunt)"));
      }
    } else if (absl::ConsumePrefix(&filter, "state=")) {
      state = absl::AsciiStrToUpper(filter);
      if (absl::StartsWith(state, "WORKFLOW_")) state = state.substr(9);
      if (state != "QUEUED" && state != "RUNNING" && state != "SUCCEEDED" && state != "FAILED" &&
          state != "CANCELLED") {
        return absl::InvalidArgumentError(absl::StrCat(
            "filter: unknown state '", filter,
            "' (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)"));
      }
    } else {
      return absl::InvalidArgumentError(
          "filter: use kind=KIND or state=STATE (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)");
    }
  }
  absl::MutexLock lock(&mu_);
  std::vector<const v1::Workflow*> all;
  for (const auto& [name, workflow] : workflows_) {
    if (!kind.empty() && workflow.kind() != kind) continue;
    if (!state.empty() && WorkflowStateName(workflow.state()) != state) continue;
    all.push_back(&workflow);
  }
  std::sort(all.begin(), all.end(), [](const v1::Workflow* a, const v1::Workflow* b) {
    const absl::Time ta = TimeFromTimestamp(a->create_time()),
                     tb = TimeFromTimestamp(b->create_time());
    return ta != tb ? ta > tb : a->name() > b->name();
  });
  size_t start = 0;
  if (!page_token.empty()) {
    auto at = std::find_if(all.begin(), all.end(),
                           [&](const v1::Workflow* w) { return w->name() == page_token; });
    if (at == all.end()) {
      return absl::InvalidArgumentError("page_token: not one this listing handed out");
    }
    start = static_cast<size_t>(at - all.begin()) + 1;
  }
  Page page;
  for (size_t i = start; i < all.size() && page.workflows.size() < static_cast<size_t>(page_size);
       ++i) {
    page.workflows.push_back(*all[i]);
  }
  if (start + page.workflows.size() < all.size()) {
    page.next_page_token = page.workflows.back().name();
  }
  return page;
}

absl::StatusOr<v1::Workflow> WorkflowManager::Cancel(absl::string_view name, absl::Time now) {
  std::string run_in_progress;
  std::string full;
  {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    if (workflow == nullptr) {
      return absl::NotFoundError(absl::StrCat("workflow ", NameOf(name), " not found"));
    }
    if (IsFinalWorkflowState(workflow->state())) {
      return absl::FailedPreconditionError(absl::StrCat(
          workflow->name(), " has already ended (", WorkflowStateName(workflow->state()), ")"));
    }
    full = workflow->name();
    // Not started yet (one that was running before a restart and waits for
    // a slot again is cancelled as a running one is).
    if (auto queued = std::find(queue_.begin(), queue_.end(), full);
        queued != queue_.end() && workflow->state() == v1::WORKFLOW_QUEUED) {
      queue_.erase(queued);
      workflow->set_state(v1::WORKFLOW_CANCELLED);
      workflow->set_error("cancelled before it started");
      *workflow->mutable_end_time() = TimestampFromTime(now);
      SaveLocked(*workflow);
      LogInfo("workflow.state").Str("workflow", full).Str("state", "CANCELLED");
      return *workflow;
    }
    cancelling_.insert(full);
    for (const v1::WorkflowCell& cell : workflow->cells()) {
      if (!cell.run().empty() && !IsFinalRunState(cell.state())) run_in_progress = cell.run();
    }
  }
  // The executor sees the mark and ends the workflow once no run of it is
  // left going; cancelling the run in progress (its event wakes the
  // workflow) makes that quick.
  if (!run_in_progress.empty()) (void)runs_->CancelRun(run_in_progress, now);
  Wake(full);
  return Get(full);
}

absl::Status WorkflowManager::Delete(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  v1::Workflow* workflow = FindLocked(name);
  if (workflow == nullptr) {
    return absl::NotFoundError(absl::StrCat("workflow ", NameOf(name), " not found"));
  }
  if (!IsFinalWorkflowState(workflow->state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        workflow->name(), " is ", WorkflowStateName(workflow->state()), "; cancel it first"));
  }
  const std::string full = workflow->name();
  if (absl::Status deleted = store_->DeleteWorkflow(full); !deleted.ok()) return deleted;
  workflows_.erase(full);
  LogInfo("workflow.deleted").Str("workflow", full);
  return absl::OkStatus();
}

absl::StatusOr<v1::WorkflowReport> WorkflowManager::Report(absl::string_view name) {
  absl::StatusOr<v1::Workflow> workflow = Get(name);
  if (!workflow.ok()) return workflow.status();
  v1::WorkflowReport report;
  if (workflow->spec().has_report()) {
    if (workflow->state() != v1::WORKFLOW_SUCCEEDED) {
      return absl::FailedPreconditionError(absl::StrCat(
          workflow->name(), " is ", WorkflowStateName(workflow->state()), "; its page comes once it "
          "has succeeded"));
    }
    absl::StatusOr<std::string> html = store_->GetWorkflowReport(workflow->name());
    if (!html.ok()) return html.status();
    report.set_title(workflow->name());
    report.set_html(*std::move(html));
    return report;
  }
  std::vector<std::string> names;
  if (workflow->spec().has_hunt()) {  // of its output, not its runs
    report.set_title(workflow->name());
    report.set_html(workflows::HuntReportHtml(*workflow));
    return report;
  }
  if (workflow->spec().has_advice() || workflow->spec().has_check()) {
    absl::StatusOr<std::vector<std::string>> selected = SelectedRuns(workflow->spec());
    if (!selected.ok()) return selected.status();
    names = *std::move(selected);
  } else {
    names = workflows::CellRuns(*workflow);
  }
  const std::vector<RunWithResults> runs = workflows::FetchRuns(*runs_, names);
  absl::StatusOr<std::string> html = workflows::RenderReport(*workflow, runs);
  if (!html.ok()) return html.status();
  report.set_title(workflow->spec().has_suite() ? workflow->name() : RunsReportTitle(runs));
  report.set_html(*std::move(html));
  return report;
}

absl::StatusOr<v1::Workflow> WorkflowManager::Subscribe(absl::string_view name,
                                                        std::shared_ptr<WorkflowSink> sink) {
  absl::MutexLock lock(&mu_);
  v1::Workflow* workflow = FindLocked(name);
  if (workflow == nullptr) {
    return absl::NotFoundError(absl::StrCat("workflow ", NameOf(name), " not found"));
  }
  if (!IsFinalWorkflowState(workflow->state()) && !stopping_) {
    sinks_[workflow->name()].push_back(std::move(sink));
  }
  return *workflow;
}

void WorkflowManager::Unsubscribe(const std::string& name, const WorkflowSink* sink) {
  absl::MutexLock lock(&mu_);
  auto it = sinks_.find(name);
  if (it == sinks_.end()) return;
  auto& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const std::shared_ptr<WorkflowSink>& s) { return s.get() == sink; }),
             list.end());
  if (list.empty()) sinks_.erase(it);
}

std::vector<std::string> WorkflowManager::SweepRetention(absl::Time now) {
  if (!options_.retention.active()) return {};
  // Long enough for a schedule's tick to read the outcome of its firing.
  constexpr absl::Duration kJustEnded = absl::Minutes(10);
  std::vector<Store::FinishedRun> ended;  // retention.h's rows, of workflows
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, workflow] : workflows_) {
      if (!IsFinalWorkflowState(workflow.state())) continue;
      ended.push_back({name, absl::ToUnixNanos(TimeFromTimestamp(workflow.create_time())),
                       workflow.has_end_time()
                           ? absl::ToUnixNanos(TimeFromTimestamp(workflow.end_time()))
                           : 0});
    }
  }
  std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) {
    return a.create_time_ns != b.create_time_ns ? a.create_time_ns > b.create_time_ns
                                                : a.name > b.name;
  });
  std::vector<std::string> deleted;
  const int64_t just_ended_ns = absl::ToUnixNanos(now - kJustEnded);
  for (const std::string& name : RunsPastRetention(ended, options_.retention, now)) {
    const auto row =
        std::find_if(ended.begin(), ended.end(), [&](const auto& w) { return w.name == name; });
    if (row->end_time_ns > just_ended_ns) continue;
    if (Delete(name).ok()) deleted.push_back(name);
  }
  if (!deleted.empty()) {
    LogInfo("workflow.retention", absl::StrCat("workflow retention deleted ", deleted.size(),
                                               " ended workflows: ", absl::StrJoin(deleted, ", ")))
        .Int("deleted", static_cast<int64_t>(deleted.size()));
  }
  return deleted;
}

int WorkflowManager::active_count() {
  absl::MutexLock lock(&mu_);
  int active = 0;
  for (const auto& [name, workflow] : workflows_) {
    active += IsFinalWorkflowState(workflow.state()) ? 0 : 1;
  }
  return active;
}

v1::Workflow* WorkflowManager::FindLocked(absl::string_view name) {
  auto it = workflows_.find(NameOf(name));
  return it == workflows_.end() ? nullptr : &it->second;
}

void WorkflowManager::SaveLocked(v1::Workflow& workflow, int changed_cell) {
  workflow.set_version(workflow.version() + 1);
  absl::Status s;
  if (changed_cell >= 0 && changed_cell < workflow.cells_size()) {
    // Its own fields without a copy of its cells (moved out and back).
    google::protobuf::RepeatedPtrField<v1::WorkflowCell> cells;
    cells.Swap(workflow.mutable_cells());
    const v1::Workflow head = workflow;
    workflow.mutable_cells()->Swap(&cells);
    s = store_->PutWorkflowCell(head, changed_cell, workflow.cells(changed_cell));
  } else {
    s = store_->PutWorkflow(workflow);
  }
  if (!s.ok()) {
    LogError("store.error").Str("workflow", workflow.name()).Str("error", std::string(s.message()));
  }
  auto it = sinks_.find(workflow.name());
  if (it == sinks_.end()) return;
  for (const auto& sink : it->second) sink->OnWorkflow(workflow);
  if (IsFinalWorkflowState(workflow.state())) {
    for (const auto& sink : it->second) sink->OnEnd();
    sinks_.erase(it);
  }
}

absl::StatusOr<std::vector<std::string>> WorkflowManager::SelectedRuns(
    const v1::WorkflowSpec& spec) {
  const v1::RunSelection& selection =
      spec.has_advice() ? spec.advice() : spec.has_check() ? spec.check().runs() : spec.report();
  const absl::string_view field =
      spec.has_advice() ? "spec.advice" : spec.has_check() ? "spec.check.runs" : "spec.report";
  return workflows::SelectRuns(selection, field, *runs_,
                               [this](absl::string_view name) { return Get(name); }, *bounds_);
}

}  // namespace collbench

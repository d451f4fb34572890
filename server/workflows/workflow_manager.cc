// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/workflow_manager.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "analysis/report.h"
#include "api/convert.h"
#include "common/log.h"
#include "server/core/admission.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/workflows/checks.h"
#include "server/workflows/workflow_plan.h"

namespace collbench {
namespace {

std::string RunNameOf(absl::string_view text) {
  return absl::StartsWith(text, "runs/") ? std::string(text) : absl::StrCat("runs/", text);
}

std::string NewId(const std::string& kind, absl::Time now) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  absl::MutexLock lock(&mu);
  return absl::StrFormat("%s-%s-%04x", kind, absl::FormatTime("%Y%m%d-%H%M%S", now,
                                                               absl::UTCTimeZone()),
                         absl::Uniform<uint32_t>(*gen, 0, 0x10000));
}

}  // namespace

WorkflowManager::WorkflowManager(Store* store, RunManager* runs, Fleet* fleet,
                                 WorkflowManagerOptions options)
    : store_(store), runs_(runs), fleet_(fleet), options_(options) {}

WorkflowManager::~WorkflowManager() { Stop(); }

std::string WorkflowManager::NameOf(absl::string_view text) {
  return absl::StartsWith(text, "workflows/") ? std::string(text)
                                              : absl::StrCat("workflows/", text);
}

absl::Status WorkflowManager::Start() {
  absl::StatusOr<std::vector<v1::Workflow>> stored = store_->ListWorkflows();
  if (!stored.ok()) return stored.status();
  {
    absl::MutexLock lock(&mu_);
    // Oldest first into the queue: they were waiting longest.
    for (auto it = stored->rbegin(); it != stored->rend(); ++it) {
      if (!IsFinalWorkflowState(it->state())) {
        queue_.push_back(it->name());
        LogInfo("workflow.recovered").Str("workflow", it->name()).Str("state", WorkflowStateName(it->state()));
      }
      workflows_[it->name()] = *it;
    }
  }
  for (int i = 0; i < std::max(options_.max_running, 1); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
  return absl::OkStatus();
}

void WorkflowManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  absl::MutexLock lock(&mu_);
  for (auto& [name, sinks] : sinks_) {
    for (const auto& sink : sinks) sink->OnEnd();
  }
  sinks_.clear();
}

void WorkflowManager::Loop() {
  while (true) {
    std::string name;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkflowManager* m) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return m->stopping_ || !m->queue_.empty();
          },
          this));
      if (stopping_) return;
      name = queue_.front();
      queue_.pop_front();
    }
    Execute(name);
  }
}

absl::StatusOr<v1::Workflow> WorkflowManager::Create(const v1::CreateWorkflowRequest& request,
                                                     absl::Time now, absl::string_view caller) {
  const v1::WorkflowSpec& spec = request.spec();
  absl::StatusOr<std::string> kind = workflows::KindOf(spec);
  if (!kind.ok()) return kind.status();
  auto same_request = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<v1::Workflow> {
    for (const auto& [name, workflow] : workflows_) {
      if (workflow.request_id() != request.request_id()) continue;
      if (google::protobuf::util::MessageDifferencer::Equals(workflow.spec(), spec)) {
        return workflow;
      }
      return absl::AlreadyExistsError(absl::StrCat(
          "request_id: \"", request.request_id(), "\" was used for ", name,
          " with a different spec; a retry must send the same spec, a new workflow needs a new "
          "request_id"));
    }
    return absl::NotFoundError("");
  };
  if (!request.request_id().empty()) {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<v1::Workflow> existing = same_request();
    if (!absl::IsNotFound(existing.status())) return existing;
  }
  {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(queue_.size()) >= options_.max_queued) {
      return WithRetryAfter(
          absl::ResourceExhaustedError(absl::StrCat(
              "workflow queue full: ", queue_.size(), " workflows wait (at most ",
              options_.max_queued, "); retry after one has ended")),
          30);
    }
  }
  const std::string id = NewId(*kind, now);
  v1::Workflow workflow;
  workflow.set_name(absl::StrCat("workflows/", id));
  *workflow.mutable_spec() = spec;
  workflow.set_kind(*kind);
  workflow.set_state(v1::WORKFLOW_QUEUED);
  workflow.set_request_id(request.request_id());
  *workflow.mutable_create_time() = TimestampFromTime(now);
  if (!spec.baseline().empty()) {
    if (!spec.has_matrix() && !spec.has_suite()) {
      return absl::InvalidArgumentError(
          "spec.baseline: only a matrix or a suite checks its runs against a baseline (a check "
          "workflow names its baseline in spec.check.baseline)");
    }
    absl::StatusOr<v1::Baseline> baseline = FindBaseline(spec.baseline(), "spec.baseline");
    if (!baseline.ok()) return baseline.status();
  }
  if (spec.has_check()) {
    absl::StatusOr<v1::Baseline> baseline = FindBaseline(spec.check().baseline(), "spec.check.baseline");
    if (!baseline.ok()) return baseline.status();
    // The statistics' options, refused now rather than when it runs.
    if (absl::Status valid =
            workflows::ValidateCheckOptions(spec.check().threshold(), spec.check().alpha());
        !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.check.", valid.message()));
    }
  }
  if (spec.has_advice() || spec.has_report() || spec.has_check()) {
    absl::StatusOr<std::vector<std::string>> selected = SelectedRuns(spec);
    if (!selected.ok()) return selected.status();
  } else if (spec.has_hunt()) {
    // A hunt's cells are its current round's runs (workflow_hunt.cc); the
    // plan keeps the workers it selected, from which the rounds follow.
    absl::StatusOr<workflows::HuntPlan> plan = workflows::PlanHunt(
        spec, id, fleet_->ListWorkers(),
        [this](const v1::RunSpec& run) { return runs_->CheckRun(run); });
    if (!plan.ok()) return plan.status();
    for (v1::HuntWorker& w : plan->workers) {
      *workflow.mutable_output()->mutable_hunt()->add_workers() = std::move(w);
    }
    for (std::string& line : plan->header) workflow.mutable_output()->add_header(std::move(line));
    workflow.set_cells_total(plan->survey_runs);
  } else {
    absl::StatusOr<workflows::Plan> plan = workflows::PlanWorkflow(
        spec, id, fleet_->ListWorkers(),
        [this](const v1::RunSpec& run) { return runs_->CheckRun(run); });
    if (!plan.ok()) return plan.status();
    int skipped = 0;
    for (v1::WorkflowCell& cell : plan->cells) {
      skipped += cell.skipped().empty() ? 0 : 1;
      if (!spec.schedule().empty()) {
        (*cell.mutable_spec()->mutable_labels())[kScheduleLabel] =
            std::string(absl::StripPrefix(spec.schedule(), "schedules/"));
      }
      *workflow.add_cells() = std::move(cell);
    }
    if (skipped == workflow.cells_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec: none of the ", workflow.cells_size(), " runs can be made on these workers",
          workflow.cells_size() > 0 ? absl::StrCat(" (", workflow.cells(0).label(), ": ",
                                                   workflow.cells(0).skipped(), ")")
                                    : std::string()));
    }
    workflow.set_cells_total(workflow.cells_size());
    workflow.set_cells_done(skipped);
    for (std::string& line : plan->header) workflow.mutable_output()->add_header(std::move(line));
  }
  if (request.validate_only()) return workflow;
  absl::MutexLock lock(&mu_);
  if (!request.request_id().empty()) {  // another create with this id won the race
    absl::StatusOr<v1::Workflow> existing = same_request();
    if (!absl::IsNotFound(existing.status())) return existing;
  }
  if (absl::Status stored = store_->PutWorkflow(workflow); !stored.ok()) return stored;
  workflows_[workflow.name()] = workflow;
  queue_.push_back(workflow.name());
  LogInfo("workflow.created").Str("workflow", workflow.name()).Str("cells", absl::StrCat(workflow.cells_total())).Str("caller", caller.empty() ? "anonymous" : std::string(caller));
  return workflow;
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
    if (workflow->state() == v1::WORKFLOW_QUEUED &&
        std::find(queue_.begin(), queue_.end(), workflow->name()) != queue_.end()) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), workflow->name()));
      workflow->set_state(v1::WORKFLOW_CANCELLED);
      workflow->set_error("cancelled before it started");
      *workflow->mutable_end_time() = TimestampFromTime(now);
      SaveLocked(*workflow);
      LogInfo("workflow.state").Str("workflow", workflow->name()).Str("state", "CANCELLED");
      return *workflow;
    }
    cancelling_.insert(workflow->name());
    for (const v1::WorkflowCell& cell : workflow->cells()) {
      if (!cell.run().empty() && !IsFinalRunState(cell.state())) run_in_progress = cell.run();
    }
  }
  // The executing thread sees the mark and ends the workflow; cancelling the
  // run it follows makes that quick.
  if (!run_in_progress.empty()) (void)runs_->CancelRun(run_in_progress, now);
  return Get(name);
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
    names = CellRuns(*workflow);
  }
  const std::vector<RunWithResults> runs = FetchRuns(names);
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

void WorkflowManager::SaveLocked(v1::Workflow& workflow) {
  workflow.set_version(workflow.version() + 1);
  if (absl::Status s = store_->PutWorkflow(workflow); !s.ok()) {
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

bool WorkflowManager::StopOrCancelLocked(const std::string& name) {
  return stopping_ || cancelling_.count(name) > 0;
}

absl::StatusOr<std::vector<std::string>> WorkflowManager::SelectedRuns(
    const v1::WorkflowSpec& spec) {
  const v1::RunSelection& selection =
      spec.has_advice() ? spec.advice() : spec.has_check() ? spec.check().runs() : spec.report();
  const absl::string_view field =
      spec.has_advice() ? "spec.advice" : spec.has_check() ? "spec.check.runs" : "spec.report";
  if (selection.runs_size() > 0 && !selection.workflow().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": name runs or a workflow, not both"));
  }
  std::vector<std::string> names;
  if (selection.runs_size() > 0) {
    for (int i = 0; i < selection.runs_size(); ++i) {
      absl::StatusOr<v1::Run> run = runs_->GetRun(RunNameOf(selection.runs(i)));
      if (!run.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".runs[", i, "]: ", run.status().message()));
      }
      names.push_back(run->name());
    }
    return names;
  }
  if (selection.workflow().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": name the runs (runs) or a workflow (workflow) it is about"));
  }
  absl::MutexLock lock(&mu_);
  const v1::Workflow* workflow = FindLocked(selection.workflow());
  if (workflow == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".workflow: workflow ",
                                                   NameOf(selection.workflow()), " not found"));
  }
  if (!IsFinalWorkflowState(workflow->state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ".workflow: ", workflow->name(), " is ", WorkflowStateName(workflow->state()),
        "; ask once it has ended"));
  }
  names = CellRuns(*workflow);
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".workflow: ", workflow->name(), " made no run"));
  }
  return names;
}

std::vector<std::string> WorkflowManager::CellRuns(const v1::Workflow& workflow) const {
  std::vector<std::string> names;
  for (const v1::WorkflowCell& cell : workflow.cells()) {
    if (!cell.run().empty()) names.push_back(cell.run());
  }
  return names;
}

std::vector<RunWithResults> WorkflowManager::FetchRuns(const std::vector<std::string>& names) {
  std::vector<RunWithResults> runs;
  for (const std::string& name : names) {
    absl::StatusOr<v1::Run> run = runs_->GetRun(name);
    if (!run.ok()) continue;  // deleted since
    absl::StatusOr<std::vector<v1::SizeResult>> results = runs_->GetResults(run->name());
    runs.push_back({*std::move(run), results.ok() ? *std::move(results)
                                                  : std::vector<v1::SizeResult>()});
  }
  return runs;
}

void WorkflowManager::Execute(const std::string& name) {
  v1::Workflow snapshot;
  {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    if (workflow == nullptr || IsFinalWorkflowState(workflow->state())) return;
    if (workflow->state() != v1::WORKFLOW_RUNNING) {
      workflow->set_state(v1::WORKFLOW_RUNNING);
      *workflow->mutable_start_time() = TimestampFromTime(absl::Now());
      SaveLocked(*workflow);
      LogInfo("workflow.state").Str("workflow", name).Str("state", "RUNNING");
    }
    snapshot = *workflow;
  }
  const v1::WorkflowSpec& spec = snapshot.spec();
  if (spec.has_hunt()) {
    ExecuteHunt(name, snapshot);
    return;
  }
  if (spec.has_advice() || spec.has_report() || spec.has_check()) {
    absl::StatusOr<std::vector<std::string>> selected = SelectedRuns(spec);
    if (!selected.ok()) {
      Finish(name, v1::WORKFLOW_FAILED, std::string(selected.status().message()), {},
             absl::Now());
      return;
    }
    if (spec.has_advice()) {
      Finish(name, v1::WORKFLOW_SUCCEEDED, "",
             workflows::RenderOutput(snapshot, FetchRuns(*selected)), absl::Now());
      return;
    }
    if (spec.has_check()) {
      v1::WorkflowOutput output;
      if (absl::Status checked = AddCheck(spec.check().baseline(), FetchRuns(*selected),
                                          spec.check().threshold(), spec.check().alpha(), &output);
          !checked.ok()) {
        Finish(name, v1::WORKFLOW_FAILED, std::string(checked.message()), {}, absl::Now());
        return;
      }
      Finish(name, v1::WORKFLOW_SUCCEEDED, "", output, absl::Now());
      return;
    }
    {
      // A workflow's page is its own (a suite run's tables and plots, which
      // Report() fetches); runs named one by one get the runs' page.
      absl::StatusOr<std::string> html = absl::InternalError("");
      if (!spec.report().workflow().empty()) {
        absl::StatusOr<v1::WorkflowReport> of = Report(spec.report().workflow());
        html = of.ok() ? absl::StatusOr<std::string>(of->html()) : of.status();
      } else {
        html = workflows::RenderReport(snapshot, FetchRuns(*selected));
      }
      absl::Status stored = html.ok() ? store_->PutWorkflowReport(name, *html) : html.status();
      if (!stored.ok()) {
        Finish(name, v1::WORKFLOW_FAILED, std::string(stored.message()), {}, absl::Now());
        return;
      }
    }
    Finish(name, v1::WORKFLOW_SUCCEEDED, "", workflows::RenderOutput(snapshot, {}), absl::Now());
    return;
  }
  for (int i = 0; i < snapshot.cells_size(); ++i) {
    if (!RunCell(name, i)) break;
  }
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    cancelled = cancelling_.erase(name) > 0;
    // Stopping: it goes on after the restart, unless it was being cancelled.
    if (stopping_ && !cancelled) return;
    snapshot = *FindLocked(name);
  }
  const std::vector<RunWithResults> runs = FetchRuns(CellRuns(snapshot));
  v1::WorkflowOutput output = workflows::RenderOutput(snapshot, runs);
  std::string check_error;
  if (!cancelled && !snapshot.spec().baseline().empty()) {
    // A check that cannot be made (the baseline deleted since, no run with
    // results) fails the workflow: its runs are kept, and a later check
    // workflow over them can be made.
    double threshold = 0;
    {
      absl::MutexLock lock(&mu_);
      if (!snapshot.spec().schedule().empty() && schedule_threshold_) {
        threshold = schedule_threshold_(snapshot.spec().schedule());
      }
    }
    if (absl::Status checked = AddCheck(snapshot.spec().baseline(), runs, threshold, 0, &output);
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
      first_failure = absl::StrCat(cell.label(), ": ", cell.error().empty() ? "not run" : cell.error());
    }
  }
  if (cancelled) {
    Finish(name, v1::WORKFLOW_CANCELLED, "cancelled", output, absl::Now());
  } else if (failed > 0) {
    Finish(name, v1::WORKFLOW_FAILED,
           absl::StrCat(failed, " of ", snapshot.cells_total(), " runs did not succeed (",
                        first_failure, ")"),
           output, absl::Now());
  } else if (!check_error.empty()) {
    Finish(name, v1::WORKFLOW_FAILED, check_error, output, absl::Now());
  } else {
    Finish(name, v1::WORKFLOW_SUCCEEDED, "", output, absl::Now());
  }
}

absl::Status WorkflowManager::AddCheck(const std::string& baseline_name,
                                       const std::vector<RunWithResults>& runs, double threshold,
                                       double alpha, v1::WorkflowOutput* output) {
  absl::StatusOr<v1::Baseline> baseline = FindBaseline(baseline_name, "baseline");
  if (!baseline.ok()) return baseline.status();
  absl::StatusOr<v1::CheckOutput> check = workflows::CheckAgainst(*baseline, runs, threshold, alpha);
  if (!check.ok()) return check.status();
  *output->add_tables() = workflows::CheckTable(*check);
  *output->mutable_check() = *std::move(check);
  return absl::OkStatus();
}

absl::StatusOr<v1::Baseline> WorkflowManager::FindBaseline(const std::string& text,
                                                           absl::string_view field) {
  absl::StatusOr<std::string> name = workflows::BaselineName(text, field);
  if (!name.ok()) return name.status();
  absl::StatusOr<v1::Baseline> baseline = store_->GetBaseline(*name);
  if (absl::IsNotFound(baseline.status())) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": baseline ", *name, " not found (collbench baseline list shows them)"));
  }
  return baseline;
}

absl::StatusOr<v1::Baseline> WorkflowManager::CreateBaseline(
    const v1::CreateBaselineRequest& request, absl::Time now, absl::string_view caller) {
  absl::StatusOr<std::string> name = workflows::BaselineName(request.baseline_id(), "baseline_id");
  if (!name.ok()) return name.status();
  v1::WorkflowSpec selection;
  *selection.mutable_check()->mutable_runs()->mutable_runs() = request.runs();
  selection.mutable_check()->mutable_runs()->set_workflow(request.workflow());
  absl::StatusOr<std::vector<std::string>> selected = SelectedRuns(selection);
  if (!selected.ok()) {
    std::string message(selected.status().message());
    absl::StrReplaceAll({{"spec.check.runs.", ""}, {"spec.check.runs", "runs"}}, &message);
    return absl::Status(selected.status().code(), message);
  }
  const std::vector<RunWithResults> runs = FetchRuns(*selected);
  for (const RunWithResults& run : runs) {
    if (!IsFinalRunState(run.run.state())) {
      return absl::FailedPreconditionError(absl::StrCat(
          run.run.name(), " is ", v1::RunState_Name(run.run.state()),
          "; a baseline is made of runs that have ended"));
    }
  }
  absl::StatusOr<v1::Baseline> baseline = workflows::MakeBaseline(*name, runs);
  if (!baseline.ok()) return baseline.status();
  baseline->set_description(request.description());
  baseline->set_workflow(request.workflow().empty() ? "" : NameOf(request.workflow()));
  *baseline->mutable_create_time() = TimestampFromTime(now);
  absl::MutexLock lock(&baselines_mu_);
  absl::StatusOr<v1::Baseline> existing = store_->GetBaseline(*name);
  if (existing.ok() && !request.replace()) {
    return absl::AlreadyExistsError(absl::StrCat(
        *name, " exists (made ", existing->create_time().seconds(),
        "); pass replace (--replace) to overwrite it, or pick another name"));
  }
  if (absl::Status stored = store_->PutBaseline(*baseline); !stored.ok()) return stored;
  LogInfo("baseline.created")
      .Str("baseline", *name)
      .Int("entries", baseline->entries_size())
      .Int("runs", baseline->runs_size())
      .Str("caller", caller.empty() ? "anonymous" : std::string(caller));
  return baseline;
}

absl::StatusOr<v1::Baseline> WorkflowManager::GetBaseline(absl::string_view text) {
  absl::StatusOr<std::string> name = workflows::BaselineName(text, "name");
  if (!name.ok()) return name.status();
  return store_->GetBaseline(*name);
}

absl::StatusOr<std::vector<v1::Baseline>> WorkflowManager::ListBaselines() {
  absl::StatusOr<std::vector<v1::Baseline>> all = store_->ListBaselines();
  if (!all.ok()) return all.status();
  for (v1::Baseline& baseline : *all) {
    baseline.set_entries_total(baseline.entries_size());
    baseline.clear_entries();
  }
  return all;
}

absl::Status WorkflowManager::DeleteBaseline(absl::string_view text) {
  absl::StatusOr<std::string> name = workflows::BaselineName(text, "name");
  if (!name.ok()) return name.status();
  absl::MutexLock lock(&baselines_mu_);
  if (absl::Status deleted = store_->DeleteBaseline(*name); !deleted.ok()) return deleted;
  LogInfo("baseline.deleted").Str("baseline", *name);
  return absl::OkStatus();
}

bool WorkflowManager::RunCell(const std::string& name, int index) {
  v1::RunSpec spec;
  std::string run;
  {
    absl::MutexLock lock(&mu_);
    if (StopOrCancelLocked(name)) return false;
    const v1::WorkflowCell& cell = FindLocked(name)->cells(index);
    if (!cell.skipped().empty()) return true;
    if (!cell.run().empty() && IsFinalRunState(cell.state())) return true;
    spec = cell.spec();
    run = cell.run();
  }
  auto update = [&](const std::function<void(v1::WorkflowCell&, v1::Workflow&)>& change) {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    change(*workflow->mutable_cells(index), *workflow);
    SaveLocked(*workflow);
  };
  while (run.empty()) {
    if (spec.labels().contains(kScheduleLabel) && !runs_->WorkersIdle(spec.workers()).ok()) {
      // A scheduled check's run waits for its workers to be idle, so a
      // user's run never waits behind it.
      absl::SleepFor(options_.poll_interval);
      absl::MutexLock lock(&mu_);
      if (StopOrCancelLocked(name)) return false;
      continue;
    }
    absl::StatusOr<v1::Run> created =
        runs_->CreateRun(spec, absl::StrCat(name, "/cell-", index), absl::Now(), name);
    if (absl::IsResourceExhausted(created.status())) {  // the queue or the rate: wait
      absl::SleepFor(absl::Seconds(1));
      absl::MutexLock lock(&mu_);
      if (StopOrCancelLocked(name)) return false;
      continue;
    }
    if (!created.ok()) {
      update([&](v1::WorkflowCell& cell, v1::Workflow& workflow) {
        cell.set_state(v1::FAILED);
        cell.set_error(absl::StrCat("not accepted: ", created.status().message()));
        workflow.set_cells_done(workflow.cells_done() + 1);
      });
      return true;
    }
    run = created->name();
    update([&](v1::WorkflowCell& cell, v1::Workflow&) {
      cell.set_run(run);
      cell.set_state(created->state());
    });
  }
  v1::RunState seen = v1::RUN_STATE_UNSPECIFIED;
  while (true) {
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return false;
      cancel = cancelling_.count(name) > 0;
    }
    // Cancel() cancelled the run it saw; one created since is cancelled here.
    if (cancel) (void)runs_->CancelRun(run, absl::Now());
    absl::StatusOr<v1::Run> now = runs_->GetRun(run);
    if (!now.ok()) {
      update([&](v1::WorkflowCell& cell, v1::Workflow& workflow) {
        cell.set_state(v1::FAILED);
        cell.set_error(std::string(now.status().message()));
        workflow.set_cells_done(workflow.cells_done() + 1);
      });
      return true;
    }
    if (now->state() != seen) {
      seen = now->state();
      const bool final = IsFinalRunState(seen);
      update([&](v1::WorkflowCell& cell, v1::Workflow& workflow) {
        cell.set_state(seen);
        cell.set_error(now->error());
        if (final) workflow.set_cells_done(workflow.cells_done() + 1);
      });
      if (final) {
        absl::MutexLock lock(&mu_);
        return !StopOrCancelLocked(name);
      }
    }
    absl::SleepFor(options_.poll_interval);
  }
}

void WorkflowManager::Finish(const std::string& name, v1::WorkflowState state,
                             const std::string& error, const v1::WorkflowOutput& output,
                             absl::Time now) {
  absl::MutexLock lock(&mu_);
  v1::Workflow* workflow = FindLocked(name);
  if (workflow == nullptr) return;
  // The plan's header stays above the tables.
  v1::WorkflowOutput merged = output;
  merged.mutable_header()->CopyFrom(workflow->output().header());
  *workflow->mutable_output() = std::move(merged);
  workflow->set_state(state);
  workflow->set_error(error);
  *workflow->mutable_end_time() = TimestampFromTime(now);
  SaveLocked(*workflow);
  LogInfo("workflow.state").Str("workflow", name).Str("state", WorkflowStateName(state)).Str("error", error);
}

}  // namespace collbench

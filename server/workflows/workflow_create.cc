// SPDX-License-Identifier: Apache-2.0
// WorkflowManager::Create: a workflow checked and planned in full before
// anything is stored (docs/design/workflows.md#planning).
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "api/convert.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/core/admission.h"
#include "server/core/run_manager.h"  // kScheduleLabel
#include "server/workflows/checks.h"
#include "server/workflows/workflow_manager.h"
#include "server/workflows/workflow_plan.h"

namespace collbench {

absl::StatusOr<v1::Workflow> WorkflowManager::SameRequestLocked(
    const v1::CreateWorkflowRequest& request) {
  for (const auto& [name, workflow] : workflows_) {
    if (workflow.request_id() != request.request_id()) continue;
    if (google::protobuf::util::MessageDifferencer::Equals(workflow.spec(), request.spec())) {
      return workflow;
    }
    return absl::AlreadyExistsError(absl::StrCat(
        "request_id: \"", request.request_id(), "\" was used for ", name,
        " with a different spec; a retry must send the same spec, a new workflow needs a new "
        "request_id"));
  }
  return absl::NotFoundError("");
}

absl::StatusOr<v1::Workflow> WorkflowManager::Create(const v1::CreateWorkflowRequest& request,
                                                     absl::Time now, absl::string_view caller) {
  const v1::WorkflowSpec& spec = request.spec();
  ASSIGN_OR_RETURN(const std::string kind, workflows::KindOf(spec));
  if (!request.request_id().empty()) {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<v1::Workflow> existing = SameRequestLocked(request);
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
  const std::string id = NewId(kind, now);
  v1::Workflow workflow;
  workflow.set_name(absl::StrCat("workflows/", id));
  *workflow.mutable_spec() = spec;
  workflow.set_kind(kind);
  workflow.set_state(v1::WORKFLOW_QUEUED);
  workflow.set_request_id(request.request_id());
  *workflow.mutable_create_time() = TimestampFromTime(now);
  RETURN_IF_ERROR(Plan(spec, id, &workflow));
  if (request.validate_only()) return workflow;
  std::vector<std::string> started;
  {
    absl::MutexLock lock(&mu_);
    if (!request.request_id().empty()) {  // another create with this id won the race
      absl::StatusOr<v1::Workflow> existing = SameRequestLocked(request);
      if (!absl::IsNotFound(existing.status())) return existing;
    }
    RETURN_IF_ERROR(store_->PutWorkflow(workflow));
    workflows_[workflow.name()] = workflow;
    queue_.push_back(workflow.name());
    LogInfo("workflow.created")
        .Str("workflow", workflow.name())
        .Str("cells", absl::StrCat(workflow.cells_total()))
        .Str("caller", caller.empty() ? "anonymous" : std::string(caller));
    started = StartQueuedLocked();
  }
  for (const std::string& name : started) Wake(name);
  return workflow;
}

absl::Status WorkflowManager::CheckBaselineOptions(const v1::WorkflowSpec& spec) {
  if (!spec.baseline().empty()) {
    if (!spec.has_matrix() && !spec.has_suite()) {
      return absl::InvalidArgumentError(
          "spec.baseline: only a matrix or a suite checks its runs against a baseline (a check "
          "workflow names its baseline in spec.check.baseline)");
    }
    RETURN_IF_ERROR(baselines_.Find(spec.baseline(), "spec.baseline").status());
    if (absl::Status valid = workflows::ValidateCheckOptions(spec.baseline_threshold(), 0);
        !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.baseline_", valid.message()));
    }
  } else if (spec.baseline_threshold() != 0) {
    return absl::InvalidArgumentError(
        "spec.baseline_threshold: only with spec.baseline (the check it is the threshold of)");
  }
  if (spec.has_check()) {
    RETURN_IF_ERROR(baselines_.Find(spec.check().baseline(), "spec.check.baseline").status());
    // The statistics' options, refused now rather than when it runs.
    if (absl::Status valid =
            workflows::ValidateCheckOptions(spec.check().threshold(), spec.check().alpha());
        !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.check.", valid.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status WorkflowManager::Plan(const v1::WorkflowSpec& spec, const std::string& id,
                                   v1::Workflow* workflow) {
  // Counted from the lists' sizes, so that a refused workflow costs no
  // planning (docs/operations/limits.md#workflows-and-run-lists).
  RETURN_IF_ERROR(bounds_->CheckWorkflowCells(workflows::CountCells(spec)));
  RETURN_IF_ERROR(CheckBaselineOptions(spec));
  const workflows::RunChecker check = [this](const v1::RunSpec& run) {
    return runs_->CheckRun(run);
  };
  if (spec.has_advice() || spec.has_report() || spec.has_check()) {
    return SelectedRuns(spec).status();
  }
  if (spec.has_hunt()) {
    // A hunt's cells are its current round's runs (workflow_hunt.cc); the
    // plan keeps the workers it selected, from which the rounds follow.
    ASSIGN_OR_RETURN(workflows::HuntPlan plan,
                     workflows::PlanHunt(spec, id, runs_->ListWorkers(), check));
    for (v1::HuntWorker& w : plan.workers) {
      *workflow->mutable_output()->mutable_hunt()->add_workers() = std::move(w);
    }
    for (std::string& line : plan.header) workflow->mutable_output()->add_header(std::move(line));
    workflow->set_cells_total(plan.survey_runs);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(workflows::Plan plan,
                   workflows::PlanWorkflow(spec, id, runs_->ListWorkers(), check));
  int skipped = 0;
  for (v1::WorkflowCell& cell : plan.cells) {
    skipped += cell.skipped().empty() ? 0 : 1;
    if (!spec.schedule().empty()) {
      (*cell.mutable_spec()->mutable_labels())[kScheduleLabel] =
          std::string(absl::StripPrefix(spec.schedule(), "schedules/"));
    }
    *workflow->add_cells() = std::move(cell);
  }
  if (skipped == workflow->cells_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec: none of the ", workflow->cells_size(), " runs can be made on these workers",
        workflow->cells_size() > 0 ? absl::StrCat(" (", workflow->cells(0).label(), ": ",
                                                  workflow->cells(0).skipped(), ")")
                                   : std::string()));
  }
  workflow->set_cells_total(workflow->cells_size());
  workflow->set_cells_done(skipped);
  for (std::string& line : plan.header) workflow->mutable_output()->add_header(std::move(line));
  return absl::OkStatus();
}

}  // namespace collbench

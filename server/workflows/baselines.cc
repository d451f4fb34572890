// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/baselines.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/convert.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/workflows/checks.h"

namespace collbench {

absl::StatusOr<v1::Baseline> Baselines::Create(const v1::CreateBaselineRequest& request,
                                               absl::Time now, absl::string_view caller) {
  ASSIGN_OR_RETURN(const std::string name,
                   workflows::BaselineName(request.baseline_id(), "baseline_id"));
  v1::RunSelection selection;
  *selection.mutable_runs() = request.runs();
  selection.set_workflow(request.workflow());
  absl::StatusOr<std::vector<std::string>> selected =
      workflows::SelectRuns(selection, "spec.check.runs", *runs_, workflows_, *bounds_);
  if (!selected.ok()) {  // the request's own field names
    std::string message(selected.status().message());
    absl::StrReplaceAll({{"spec.check.runs.", ""}, {"spec.check.runs", "runs"}}, &message);
    return absl::Status(selected.status().code(), message);
  }
  const std::vector<RunWithResults> runs = workflows::FetchRuns(*runs_, *selected);
  for (const RunWithResults& run : runs) {
    if (!IsFinalRunState(run.run.state())) {
      return absl::FailedPreconditionError(absl::StrCat(
          run.run.name(), " is ", v1::RunState_Name(run.run.state()),
          "; a baseline is made of runs that have ended"));
    }
  }
  ASSIGN_OR_RETURN(v1::Baseline baseline, workflows::MakeBaseline(name, runs));
  baseline.set_description(request.description());
  baseline.set_workflow(request.workflow().empty()
                            ? ""
                            : absl::StartsWith(request.workflow(), "workflows/")
                                  ? request.workflow()
                                  : absl::StrCat("workflows/", request.workflow()));
  *baseline.mutable_create_time() = TimestampFromTime(now);
  absl::MutexLock lock(&mu_);
  absl::StatusOr<v1::Baseline> existing = store_->GetBaseline(name);
  if (existing.ok() && !request.replace()) {
    return absl::AlreadyExistsError(absl::StrCat(
        name, " exists (made ", existing->create_time().seconds(),
        "); pass replace (--replace) to overwrite it, or pick another name"));
  }
  RETURN_IF_ERROR(store_->PutBaseline(baseline));
  LogInfo("baseline.created")
      .Str("baseline", name)
      .Int("entries", baseline.entries_size())
      .Int("runs", baseline.runs_size())
      .Str("caller", caller.empty() ? "anonymous" : std::string(caller));
  return baseline;
}

absl::StatusOr<v1::Baseline> Baselines::Get(absl::string_view text) {
  ASSIGN_OR_RETURN(const std::string name, workflows::BaselineName(text, "name"));
  return store_->GetBaseline(name);
}

absl::StatusOr<std::vector<v1::Baseline>> Baselines::List() {
  ASSIGN_OR_RETURN(std::vector<v1::Baseline> all, store_->ListBaselines());
  for (v1::Baseline& baseline : all) {
    baseline.set_entries_total(baseline.entries_size());
    baseline.clear_entries();
  }
  return all;
}

absl::Status Baselines::Delete(absl::string_view text) {
  ASSIGN_OR_RETURN(const std::string name, workflows::BaselineName(text, "name"));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(store_->DeleteBaseline(name));
  LogInfo("baseline.deleted").Str("baseline", name);
  return absl::OkStatus();
}

absl::StatusOr<v1::Baseline> Baselines::Find(const std::string& text, absl::string_view field) {
  ASSIGN_OR_RETURN(const std::string name, workflows::BaselineName(text, field));
  absl::StatusOr<v1::Baseline> baseline = store_->GetBaseline(name);
  if (absl::IsNotFound(baseline.status())) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": baseline ", name, " not found (collbench baseline list shows them)"));
  }
  return baseline;
}

absl::Status Baselines::Check(const std::string& name, const std::vector<RunWithResults>& runs,
                              double threshold, double alpha, v1::WorkflowOutput* output) {
  ASSIGN_OR_RETURN(const v1::Baseline baseline, Find(name, "baseline"));
  ASSIGN_OR_RETURN(v1::CheckOutput check,
                   workflows::CheckAgainst(baseline, runs, threshold, alpha));
  *output->add_tables() = workflows::CheckTable(check);
  *output->mutable_check() = std::move(check);
  return absl::OkStatus();
}

}  // namespace collbench

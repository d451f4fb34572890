// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/run_selection.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "common/status_macros.h"

namespace collbench::workflows {

std::string RunNameOf(absl::string_view text) {
  return absl::StartsWith(text, "runs/") ? std::string(text) : absl::StrCat("runs/", text);
}

absl::StatusOr<std::vector<std::string>> SelectRuns(const v1::RunSelection& selection,
                                                    absl::string_view field, WorkflowRuns& runs,
                                                    const WorkflowLookup& workflows,
                                                    RequestBounds& bounds) {
  if (selection.runs_size() > 0 && !selection.workflow().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": name runs or a workflow, not both"));
  }
  std::vector<std::string> names;
  if (selection.runs_size() > 0) {
    std::vector<std::string> given;
    for (const std::string& run : selection.runs()) given.push_back(RunNameOf(run));
    ASSIGN_OR_RETURN(const std::vector<std::string> distinct,
                     bounds.DistinctRuns(given, absl::StrCat(field, ".runs")));
    for (const std::string& name : distinct) {
      absl::StatusOr<v1::Run> run = runs.GetRun(name);
      if (!run.ok()) {
        const auto at = std::find(given.begin(), given.end(), name) - given.begin();
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".runs[", at, "]: ", run.status().message()));
      }
      names.push_back(run->name());
    }
    return names;
  }
  if (selection.workflow().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": name the runs (runs) or a workflow (workflow) it is about"));
  }
  absl::StatusOr<v1::Workflow> workflow = workflows(selection.workflow());
  if (!workflow.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".workflow: ", workflow.status().message()));
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

std::vector<std::string> CellRuns(const v1::Workflow& workflow) {
  std::vector<std::string> names;
  for (const v1::WorkflowCell& cell : workflow.cells()) {
    if (!cell.run().empty()) names.push_back(cell.run());
  }
  return names;
}

std::vector<RunWithResults> FetchRuns(WorkflowRuns& runs, const std::vector<std::string>& names) {
  std::vector<RunWithResults> fetched;
  for (const std::string& name : names) {
    absl::StatusOr<v1::Run> run = runs.GetRun(name);
    if (!run.ok()) continue;  // deleted since
    absl::StatusOr<std::vector<v1::SizeResult>> results = runs.GetResults(run->name());
    fetched.push_back({*std::move(run), results.ok() ? *std::move(results)
                                                    : std::vector<v1::SizeResult>()});
  }
  return fetched;
}

}  // namespace collbench::workflows

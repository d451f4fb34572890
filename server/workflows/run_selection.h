// SPDX-License-Identifier: Apache-2.0
// The runs something is about: an advice, report or check workflow's
// selection (RunSelection: runs by name, or an ended workflow's), a
// baseline's, a workflow's cells. Plain functions over the runs
// (workflow_runs.h) and a way to read workflows, so that the workflow
// manager and the baselines share them without calling each other.
#ifndef COLLBENCH_SERVER_WORKFLOWS_RUN_SELECTION_H_
#define COLLBENCH_SERVER_WORKFLOWS_RUN_SELECTION_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/run_set.h"
#include "collbench/v1/workflow.pb.h"
#include "server/core/request_bounds.h"
#include "server/workflows/workflow_runs.h"

namespace collbench::workflows {

// A workflow by name ("ID" or "workflows/ID"); NotFound naming it.
using WorkflowLookup = std::function<absl::StatusOr<v1::Workflow>(absl::string_view name)>;

// "runs/ID" from "ID" or "runs/ID".
std::string RunNameOf(absl::string_view text);

// The names of the runs `selection` names: its runs, each once (where first
// named) and each of which must exist, or the runs of its workflow, which
// must have ended and made some (as many as its cells at most). Named runs
// beyond `bounds`' runs per request are refused before any is looked up.
// InvalidArgument (FailedPrecondition for a workflow still going) naming
// `field` and the part of it that is wrong ("FIELD.runs[2]: ...").
absl::StatusOr<std::vector<std::string>> SelectRuns(const v1::RunSelection& selection,
                                                    absl::string_view field, WorkflowRuns& runs,
                                                    const WorkflowLookup& workflows,
                                                    RequestBounds& bounds);

// The runs of a workflow's cells that were created, in cell order.
std::vector<std::string> CellRuns(const v1::Workflow& workflow);

// Each named run with its results; one deleted since is left out.
std::vector<RunWithResults> FetchRuns(WorkflowRuns& runs, const std::vector<std::string>& names);

}  // namespace collbench::workflows

#endif  // COLLBENCH_SERVER_WORKFLOWS_RUN_SELECTION_H_

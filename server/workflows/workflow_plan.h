// SPDX-License-Identifier: Apache-2.0
// What a workflow will run, planned once, at create time, from its spec
// and the workers registered then (docs/design/workflows.md#planning): a matrix's combinations, a
// suite's cells, a sweep's algorithms. Every cell is checked as CreateRun
// would check it before anything runs, so a typo refuses the workflow
// whole (InvalidArgument naming the field) and a cell the workers cannot
// run is planned as skipped, with its reason, instead of failing later.
//
// Also what a workflow's runs become: its tables, tuning files and page
// (RenderOutput, RenderReport; workflow_output.cc). Plain functions of
// protos: tests drive them without a coordinator.
#ifndef COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_PLAN_H_
#define COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_PLAN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/run_set.h"
#include "analysis/table.h"
#include "collbench/v1/worker.pb.h"
#include "collbench/v1/workflow.pb.h"

namespace collbench::workflows {

// The profile a suite workflow runs at: its own, or "ci".
std::string SuiteProfile(const v1::SuiteSpec& spec);

// "matrix", "suite", "sweep", "advice" or "report"; InvalidArgument when
// the spec sets none.
absl::StatusOr<std::string> KindOf(const v1::WorkflowSpec& spec);

// How many cells PlanWorkflow would plan for a matrix, suite or sweep (each
// list's repeats counted once), from the lists' sizes, without planning
// them: what a bound on a workflow's cells is checked against before the
// work. 0 for the other kinds, and for a spec the planner will refuse (an
// unknown suite); saturates at UINT64_MAX.
uint64_t CountCells(const v1::WorkflowSpec& spec);

// What CreateRun would say of a spec (validation and the fleet), nothing
// queued: RunManager::CheckRun.
using RunChecker = std::function<absl::Status(const v1::RunSpec&)>;

struct Plan {
  std::vector<v1::WorkflowCell> cells;  // label, spec, skipped
  std::vector<std::string> header;      // lines above the output's tables
};

// The cells of a matrix, suite or sweep workflow named `id` (its runs carry
// the label workflow=ID, and the legacy labels suite-run=ID or sweep=ID
// that `suite show` and `advise --sweep` read). `workers` as ListWorkers
// returns them. Advice and report workflows have no cells: an empty plan.
absl::StatusOr<Plan> PlanWorkflow(const v1::WorkflowSpec& spec, const std::string& id,
                                  const std::vector<v1::Worker>& workers,
                                  const RunChecker& check);

// The output of a workflow whose cells ran: `runs` are the runs of its
// cells that were created, in cell order (or, for advice and report, the
// runs selected). A report's page is not part of it (RenderReport).
v1::WorkflowOutput RenderOutput(const v1::Workflow& workflow,
                                const std::vector<RunWithResults>& runs);

// The workflow's HTML page over `runs`: a suite run's tables and plots, or
// the runs' report.
absl::StatusOr<std::string> RenderReport(const v1::Workflow& workflow,
                                         const std::vector<RunWithResults>& runs);

// Per operation and size: the fastest configuration (named only where its
// win is significant) and the slowest, and their ratio. `configs[i]` names
// runs[i]'s configuration ("openmpi/pack/shm").
Table BestWorstTable(const std::vector<RunWithResults>& runs,
                     const std::vector<std::string>& configs);

}  // namespace collbench::workflows

#endif  // COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_PLAN_H_

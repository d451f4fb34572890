// SPDX-License-Identifier: Apache-2.0
// The CLI side of the coordinator's workflows (server/workflows): create
// one, follow it with a progress line per run on stderr, and print what it
// produced. `suite run`, `matrix`, `sweep`, `advise` and `report` are such
// clients, as a portal is; `collbench workflows` lists, shows, watches,
// cancels and deletes them.
#ifndef COLLBENCH_CLIENT_WORKFLOW_CLIENT_H_
#define COLLBENCH_CLIENT_WORKFLOW_CLIENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/coordinator_client.h"
#include "collbench/v1/workflow.pb.h"

namespace collbench {

// Creates the workflow and follows it to its end, printing each run as it
// ends ("[3/8] allreduce openmpi/pack/shm ... runs/… succeeded, 1.2 s") and
// each skipped cell with its reason. A spec the coordinator refuses comes
// back as its status (InvalidArgument naming the field).
absl::StatusOr<v1::Workflow> RunWorkflow(CoordinatorClient& client, const v1::WorkflowSpec& spec);

// The workflow's header lines and tables, as text on stdout.
void PrintWorkflowOutput(const v1::Workflow& workflow);

// The workflow named by `text` ("ID" or "workflows/ID").
absl::StatusOr<v1::Workflow> GetWorkflow(CoordinatorClient& client, const std::string& text);

// "workflows/ID" from "ID" or "workflows/ID"; the bare id back.
std::string WorkflowName(const std::string& text);
std::string WorkflowId(const std::string& name);

// The runs of the workflow's cells that were made, with their results, in
// cell order.
absl::StatusOr<std::vector<RunWithResults>> FetchWorkflowRuns(CoordinatorClient& client,
                                                              const v1::Workflow& workflow);

// `collbench workflows [list] | show ID | watch ID | cancel ID | delete ID`.
int WorkflowsCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_WORKFLOW_CLIENT_H_

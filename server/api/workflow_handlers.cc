// SPDX-License-Identifier: Apache-2.0
// The workflow and baseline methods: thin translations onto
// WorkflowManager, which keeps baselines beside the workflows that check
// against them.
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "server/api/handlers.h"
#include "server/core/name_pages.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

absl::StatusOr<WorkflowManager*> CoordinatorApi::Workflows() const {
  if (parts_.workflows == nullptr) return absl::UnavailableError("this server runs no workflows");
  return parts_.workflows;
}

absl::StatusOr<Baselines*> CoordinatorApi::BaselineStore() const {
  if (parts_.workflows == nullptr) return absl::UnavailableError("this server keeps no baselines");
  return parts_.workflows->baselines();
}

absl::StatusOr<v1::Workflow> CoordinatorApi::CreateWorkflow(
    const CallContext& call, const v1::CreateWorkflowRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  if (!request.has_spec()) return absl::InvalidArgumentError("spec: is required");
  return workflows->Create(request, parts_.clock->Now(), call.caller);
}

absl::StatusOr<v1::Workflow> CoordinatorApi::GetWorkflow(const CallContext& call,
                                                         const v1::GetWorkflowRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  return workflows->Get(request.name());
}

absl::StatusOr<v1::ListWorkflowsResponse> CoordinatorApi::ListWorkflows(
    const CallContext& call, const v1::ListWorkflowsRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  ASSIGN_OR_RETURN(WorkflowManager::Page page,
                   workflows->List(request.page_size(), request.page_token(), request.filter()));
  v1::ListWorkflowsResponse response;
  for (v1::Workflow& w : page.workflows) *response.add_workflows() = std::move(w);
  response.set_next_page_token(page.next_page_token);
  return response;
}

absl::StatusOr<v1::Workflow> CoordinatorApi::CancelWorkflow(
    const CallContext& call, const v1::CancelWorkflowRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  return workflows->Cancel(request.name(), parts_.clock->Now());
}

absl::StatusOr<google::protobuf::Empty> CoordinatorApi::DeleteWorkflow(
    const CallContext& call, const v1::DeleteWorkflowRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  RETURN_IF_ERROR(workflows->Delete(request.name()));
  return google::protobuf::Empty();
}

absl::StatusOr<v1::WorkflowReport> CoordinatorApi::GetWorkflowReport(
    const CallContext& call, const v1::GetWorkflowReportRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  return workflows->Report(request.name());
}

absl::StatusOr<std::shared_ptr<Watch<v1::WorkflowEvent>>> CoordinatorApi::WatchWorkflow(
    const CallContext& call, const v1::WatchWorkflowRequest& request) {
  ASSIGN_OR_RETURN(WorkflowManager * workflows, Workflows());
  ASSIGN_OR_RETURN(std::unique_ptr<WatcherSlot> slot, AcquireWatcher(call));
  ASSIGN_OR_RETURN(std::shared_ptr<WorkflowWatch> watch,
                   WorkflowWatch::Open(*workflows, request.name(), parts_.clock, std::move(slot)));
  return watch;
}

absl::StatusOr<v1::Baseline> CoordinatorApi::CreateBaseline(
    const CallContext& call, const v1::CreateBaselineRequest& request) {
  ASSIGN_OR_RETURN(Baselines * baselines, BaselineStore());
  return baselines->Create(request, parts_.clock->Now(), call.caller);
}

absl::StatusOr<v1::Baseline> CoordinatorApi::GetBaseline(const CallContext& call,
                                                         const v1::GetBaselineRequest& request) {
  ASSIGN_OR_RETURN(Baselines * baselines, BaselineStore());
  return baselines->Get(request.name());
}

absl::StatusOr<v1::ListBaselinesResponse> CoordinatorApi::ListBaselines(
    const CallContext& call, const v1::ListBaselinesRequest& request) {
  ASSIGN_OR_RETURN(Baselines * baselines, BaselineStore());
  ASSIGN_OR_RETURN(std::vector<v1::Baseline> all, baselines->List());
  v1::ListBaselinesResponse response;
  RETURN_IF_ERROR(PageByName(std::move(all), request.page_size(), request.page_token(),
                             response.mutable_baselines(), response.mutable_next_page_token()));
  return response;
}

absl::StatusOr<google::protobuf::Empty> CoordinatorApi::DeleteBaseline(
    const CallContext& call, const v1::DeleteBaselineRequest& request) {
  ASSIGN_OR_RETURN(Baselines * baselines, BaselineStore());
  RETURN_IF_ERROR(baselines->Delete(request.name()));
  return google::protobuf::Empty();
}

}  // namespace collbench

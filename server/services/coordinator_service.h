// SPDX-License-Identifier: Apache-2.0
// The Coordinator gRPC service (docs/design/run-lifecycle.md#api): a thin translation of requests
// onto RunManager (STYLE §5). WatchRun replays what is stored, then streams
// live events until the run ends. Every call is authorized first
// (docs/design/security.md#credentials): reads need a read token; CreateRun,
// CancelRun, DeleteRun, DrainWorker, UndrainWorker, ClearWorker and DeleteWorker an
// operator token, each as `authorization: Bearer TOKEN` metadata.
#ifndef COLLBENCH_SERVER_SERVICES_COORDINATOR_SERVICE_H_
#define COLLBENCH_SERVER_SERVICES_COORDINATOR_SERVICE_H_

#include "collbench/v1/coordinator.grpc.pb.h"
#include "server/auth/authorizer.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"
#include "server/workflows/schedule_manager.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

class CoordinatorService final : public v1::Coordinator::CallbackService {
 public:
  // None is owned; all outlive the service.
  // `limits` bounds WatchRun streams (shared with the REST event streams).
  // `workflows` and `schedules` may be null: their methods answer
  // UNAVAILABLE.
  CoordinatorService(RunManager* manager, WatchHub* hub, const Authorizer* authorizer,
                     WatcherLimits* limits, WorkflowManager* workflows = nullptr,
                     ScheduleManager* schedules = nullptr)
      : manager_(manager),
        hub_(hub),
        authorizer_(authorizer),
        limits_(limits),
        workflows_(workflows),
        schedules_(schedules) {}

  grpc::ServerUnaryReactor* CreateRun(grpc::CallbackServerContext* context,
                                      const v1::CreateRunRequest* request,
                                      v1::Run* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context,
                                   const v1::GetRunRequest* request, v1::Run* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context,
                                     const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerUnaryReactor* CancelRun(grpc::CallbackServerContext* context,
                                      const v1::CancelRunRequest* request,
                                      v1::Run* response) override;
  grpc::ServerUnaryReactor* DeleteRun(grpc::CallbackServerContext* context,
                                      const v1::DeleteRunRequest* request,
                                      google::protobuf::Empty* response) override;
  grpc::ServerWriteReactor<v1::RunEvent>* WatchRun(grpc::CallbackServerContext* context,
                                                    const v1::WatchRunRequest* request) override;
  grpc::ServerUnaryReactor* GetRunResults(grpc::CallbackServerContext* context,
                                          const v1::GetRunResultsRequest* request,
                                          v1::GetRunResultsResponse* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const v1::ListWorkersRequest* request,
                                        v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* GetWorker(grpc::CallbackServerContext* context,
                                      const v1::GetWorkerRequest* request,
                                      v1::Worker* response) override;
  grpc::ServerUnaryReactor* DrainWorker(grpc::CallbackServerContext* context,
                                        const v1::DrainWorkerRequest* request,
                                        v1::Worker* response) override;
  grpc::ServerUnaryReactor* UndrainWorker(grpc::CallbackServerContext* context,
                                          const v1::UndrainWorkerRequest* request,
                                          v1::Worker* response) override;
  grpc::ServerUnaryReactor* ClearWorker(grpc::CallbackServerContext* context,
                                        const v1::ClearWorkerRequest* request,
                                        v1::Worker* response) override;
  grpc::ServerUnaryReactor* DeleteWorker(grpc::CallbackServerContext* context,
                                         const v1::DeleteWorkerRequest* request,
                                         google::protobuf::Empty* response) override;

  // Workflows (workflow_methods.cc): reads need a read token, the rest an
  // operator token.
  grpc::ServerUnaryReactor* CreateWorkflow(grpc::CallbackServerContext* context,
                                           const v1::CreateWorkflowRequest* request,
                                           v1::Workflow* response) override;
  grpc::ServerUnaryReactor* GetWorkflow(grpc::CallbackServerContext* context,
                                        const v1::GetWorkflowRequest* request,
                                        v1::Workflow* response) override;
  grpc::ServerUnaryReactor* ListWorkflows(grpc::CallbackServerContext* context,
                                          const v1::ListWorkflowsRequest* request,
                                          v1::ListWorkflowsResponse* response) override;
  grpc::ServerUnaryReactor* CancelWorkflow(grpc::CallbackServerContext* context,
                                           const v1::CancelWorkflowRequest* request,
                                           v1::Workflow* response) override;
  grpc::ServerUnaryReactor* DeleteWorkflow(grpc::CallbackServerContext* context,
                                           const v1::DeleteWorkflowRequest* request,
                                           google::protobuf::Empty* response) override;
  grpc::ServerWriteReactor<v1::WorkflowEvent>* WatchWorkflow(
      grpc::CallbackServerContext* context, const v1::WatchWorkflowRequest* request) override;
  grpc::ServerUnaryReactor* GetWorkflowReport(grpc::CallbackServerContext* context,
                                              const v1::GetWorkflowReportRequest* request,
                                              v1::WorkflowReport* response) override;

  // Baselines (baseline_methods.cc): reads need a read token, the rest an
  // operator's.
  grpc::ServerUnaryReactor* CreateBaseline(grpc::CallbackServerContext* context,
                                           const v1::CreateBaselineRequest* request,
                                           v1::Baseline* response) override;
  grpc::ServerUnaryReactor* GetBaseline(grpc::CallbackServerContext* context,
                                        const v1::GetBaselineRequest* request,
                                        v1::Baseline* response) override;
  grpc::ServerUnaryReactor* ListBaselines(grpc::CallbackServerContext* context,
                                          const v1::ListBaselinesRequest* request,
                                          v1::ListBaselinesResponse* response) override;
  grpc::ServerUnaryReactor* DeleteBaseline(grpc::CallbackServerContext* context,
                                           const v1::DeleteBaselineRequest* request,
                                           google::protobuf::Empty* response) override;

  // Schedules (schedule_methods.cc): reads need a read token, the rest an
  // operator's.
  grpc::ServerUnaryReactor* CreateSchedule(grpc::CallbackServerContext* context,
                                           const v1::CreateScheduleRequest* request,
                                           v1::Schedule* response) override;
  grpc::ServerUnaryReactor* GetSchedule(grpc::CallbackServerContext* context,
                                        const v1::GetScheduleRequest* request,
                                        v1::Schedule* response) override;
  grpc::ServerUnaryReactor* ListSchedules(grpc::CallbackServerContext* context,
                                          const v1::ListSchedulesRequest* request,
                                          v1::ListSchedulesResponse* response) override;
  grpc::ServerUnaryReactor* PauseSchedule(grpc::CallbackServerContext* context,
                                          const v1::PauseScheduleRequest* request,
                                          v1::Schedule* response) override;
  grpc::ServerUnaryReactor* ResumeSchedule(grpc::CallbackServerContext* context,
                                           const v1::ResumeScheduleRequest* request,
                                           v1::Schedule* response) override;
  grpc::ServerUnaryReactor* DeleteSchedule(grpc::CallbackServerContext* context,
                                           const v1::DeleteScheduleRequest* request,
                                           google::protobuf::Empty* response) override;

 private:
  absl::Status Authorize(const grpc::CallbackServerContext* context, Role needed) const;
  // A reactor already finished with the refusal, or nullptr when allowed.
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, Role needed) const;

  RunManager* const manager_;
  WatchHub* const hub_;
  const Authorizer* const authorizer_;
  WatcherLimits* const limits_;
  WorkflowManager* const workflows_;
  ScheduleManager* const schedules_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_SERVICES_COORDINATOR_SERVICE_H_

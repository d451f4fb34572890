// SPDX-License-Identifier: Apache-2.0
// The Coordinator API's handlers (docs/design/run-lifecycle.md#api): one
// per method of the method table (server/api/method_table.h), from the
// request message to the response message or an absl::Status. The gRPC
// and REST adapters decode, authorize and encode around them; the /ui/
// pages call them too. Each is a thin translation onto a plain class
// (RunManager, WorkflowManager, ScheduleManager, CONTRIBUTING.md#style), so both
// protocols validate and answer alike.
//
// Errors: whatever the plain class answers (INVALID_ARGUMENT naming the
// field, NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS,
// RESOURCE_EXHAUSTED with a retry-after from admission, ...); UNAVAILABLE
// for a workflow, baseline or schedule method on a coordinator built
// without that manager (tests). Time comes from the injected clock.
//
// Ownership: none of the parts is owned; all outlive the CoordinatorApi.
// Thread safety: every handler may be called from any thread at once.
#ifndef COLLBENCH_SERVER_API_HANDLERS_H_
#define COLLBENCH_SERVER_API_HANDLERS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collbench/v1/baseline.pb.h"
#include "collbench/v1/coordinator.pb.h"
#include "collbench/v1/schedule.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "common/clock.h"
#include "google/protobuf/empty.pb.h"
#include "server/api/call_context.h"
#include "server/api/watch.h"
#include "server/core/fleet.h"
#include "server/core/request_bounds.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"

namespace collbench {

class ScheduleManager;
class WorkflowManager;

struct ApiParts {
  RunManager* runs = nullptr;
  Fleet* fleet = nullptr;  // the workers
  WatchHub* hub = nullptr;
  // Bounds watchers of both protocols in all and per caller; may be null:
  // no bounds.
  WatcherLimits* watchers = nullptr;
  WorkflowManager* workflows = nullptr;  // may be null: its methods answer UNAVAILABLE
  ScheduleManager* schedules = nullptr;  // may be null: its methods answer UNAVAILABLE
  const Clock* clock = nullptr;
  // The runs one request may name (the /ui/ comparison; the workflow
  // manager's bound its own); may be null: the API's own, of the defaults.
  RequestBounds* bounds = nullptr;
};

class CoordinatorApi {
 public:
  // REQUIRES: parts.runs, parts.fleet, parts.hub and parts.clock are set.
  explicit CoordinatorApi(ApiParts parts)
      : parts_(parts), bounds_(parts.bounds != nullptr ? parts.bounds : &own_bounds_) {}

  // `names` (run names) each once, where first named; InvalidArgument naming
  // `field` beyond the runs one request may name (request_bounds.h). For
  // the front ends that take lists of runs (the /ui/ comparison).
  absl::StatusOr<std::vector<std::string>> DistinctRuns(const std::vector<std::string>& names,
                                                        absl::string_view field) {
    return bounds_->DistinctRuns(names, field);
  }

  // Runs (run_handlers.cc). CreateRun needs a spec ("spec: is required").
  absl::StatusOr<v1::Run> CreateRun(const CallContext& call, const v1::CreateRunRequest& request);
  absl::StatusOr<v1::Run> GetRun(const CallContext& call, const v1::GetRunRequest& request);
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const CallContext& call,
                                                const v1::ListRunsRequest& request);
  absl::StatusOr<v1::Run> CancelRun(const CallContext& call, const v1::CancelRunRequest& request);
  absl::StatusOr<google::protobuf::Empty> DeleteRun(const CallContext& call,
                                                    const v1::DeleteRunRequest& request);
  absl::StatusOr<v1::GetRunResultsResponse> GetRunResults(const CallContext& call,
                                                          const v1::GetRunResultsRequest& request);
  // A watcher's place for the caller first (RESOURCE_EXHAUSTED beyond the
  // limits), then the run (NOT_FOUND).
  absl::StatusOr<std::shared_ptr<Watch<v1::RunEvent>>> WatchRun(const CallContext& call,
                                                                const v1::WatchRunRequest& request);

  // Workers (worker_handlers.cc).
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers(const CallContext& call,
                                                      const v1::ListWorkersRequest& request);
  absl::StatusOr<v1::Worker> GetWorker(const CallContext& call,
                                       const v1::GetWorkerRequest& request);
  absl::StatusOr<v1::Worker> DrainWorker(const CallContext& call,
                                         const v1::DrainWorkerRequest& request);
  absl::StatusOr<v1::Worker> UndrainWorker(const CallContext& call,
                                           const v1::UndrainWorkerRequest& request);
  absl::StatusOr<v1::Worker> ClearWorker(const CallContext& call,
                                         const v1::ClearWorkerRequest& request);
  absl::StatusOr<google::protobuf::Empty> DeleteWorker(const CallContext& call,
                                                       const v1::DeleteWorkerRequest& request);

  // Workflows and baselines (workflow_handlers.cc). CreateWorkflow needs a
  // spec ("spec: is required").
  absl::StatusOr<v1::Workflow> CreateWorkflow(const CallContext& call,
                                              const v1::CreateWorkflowRequest& request);
  absl::StatusOr<v1::Workflow> GetWorkflow(const CallContext& call,
                                           const v1::GetWorkflowRequest& request);
  absl::StatusOr<v1::ListWorkflowsResponse> ListWorkflows(const CallContext& call,
                                                          const v1::ListWorkflowsRequest& request);
  absl::StatusOr<v1::Workflow> CancelWorkflow(const CallContext& call,
                                              const v1::CancelWorkflowRequest& request);
  absl::StatusOr<google::protobuf::Empty> DeleteWorkflow(const CallContext& call,
                                                         const v1::DeleteWorkflowRequest& request);
  absl::StatusOr<v1::WorkflowReport> GetWorkflowReport(const CallContext& call,
                                                       const v1::GetWorkflowReportRequest& request);
  // As WatchRun: the watcher's place first, then the workflow.
  absl::StatusOr<std::shared_ptr<Watch<v1::WorkflowEvent>>> WatchWorkflow(
      const CallContext& call, const v1::WatchWorkflowRequest& request);
  absl::StatusOr<v1::Baseline> CreateBaseline(const CallContext& call,
                                              const v1::CreateBaselineRequest& request);
  absl::StatusOr<v1::Baseline> GetBaseline(const CallContext& call,
                                           const v1::GetBaselineRequest& request);
  absl::StatusOr<v1::ListBaselinesResponse> ListBaselines(const CallContext& call,
                                                          const v1::ListBaselinesRequest& request);
  absl::StatusOr<google::protobuf::Empty> DeleteBaseline(const CallContext& call,
                                                         const v1::DeleteBaselineRequest& request);

  // Schedules (schedule_handlers.cc).
  absl::StatusOr<v1::Schedule> CreateSchedule(const CallContext& call,
                                              const v1::CreateScheduleRequest& request);
  absl::StatusOr<v1::Schedule> GetSchedule(const CallContext& call,
                                           const v1::GetScheduleRequest& request);
  absl::StatusOr<v1::ListSchedulesResponse> ListSchedules(const CallContext& call,
                                                          const v1::ListSchedulesRequest& request);
  absl::StatusOr<v1::Schedule> PauseSchedule(const CallContext& call,
                                             const v1::PauseScheduleRequest& request);
  absl::StatusOr<v1::Schedule> ResumeSchedule(const CallContext& call,
                                              const v1::ResumeScheduleRequest& request);
  absl::StatusOr<google::protobuf::Empty> DeleteSchedule(const CallContext& call,
                                                         const v1::DeleteScheduleRequest& request);

 private:
  // The caller's place among the watchers (null without limits).
  absl::StatusOr<std::unique_ptr<WatcherSlot>> AcquireWatcher(const CallContext& call);
  // The manager, or UNAVAILABLE saying this server runs none.
  absl::StatusOr<WorkflowManager*> Workflows() const;
  absl::StatusOr<Baselines*> BaselineStore() const;
  absl::StatusOr<ScheduleManager*> Schedules() const;

  const ApiParts parts_;
  RequestBounds own_bounds_;  // when parts_ has none
  RequestBounds* const bounds_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_HANDLERS_H_

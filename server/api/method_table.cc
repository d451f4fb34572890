// SPDX-License-Identifier: Apache-2.0
// The method table: one line per method of proto/collbench/v1/coordinator.proto.
// To add a method: its RPC and messages in the protos, its handler in
// server/api/handlers.h, its line here, its paths in docs/openapi.yaml.
#include "server/api/method_table.h"

#include <utility>

#include "server/api/grpc_adapter.h"
#include "server/api/handlers.h"
#include "server/api/rest_adapter.h"

namespace collbench {
namespace {

template <typename Req, typename Resp>
using UnaryHandler = absl::StatusOr<Resp> (CoordinatorApi::*)(const CallContext&, const Req&);
template <typename Req, typename Event>
using StreamHandler = absl::StatusOr<std::shared_ptr<Watch<Event>>> (CoordinatorApi::*)(
    const CallContext&, const Req&);

// What every method declares besides its handler.
ApiMethod Declare(std::string name, Role role, bool streaming, std::vector<HttpBinding> http,
                  RestBody body, const google::protobuf::Descriptor* request) {
  ApiMethod method;
  method.name = std::move(name);
  method.role = role;
  method.streaming = streaming;
  method.http = std::move(http);
  method.body = body;
  method.request = request;
  return method;
}

template <typename Req, typename Resp>
ApiMethod Unary(std::string name, Role role, HttpBinding http, RestBody body,
                UnaryHandler<Req, Resp> handler) {
  ApiMethod method = Declare(std::move(name), role, /*streaming=*/false, {std::move(http)}, body,
                             Req::descriptor());
  method.grpc_handler = [role, handler](const GrpcEnv& env) {
    return GrpcUnary<Req, Resp>(env, role, handler);
  };
  method.rest_handler = [handler, body](CoordinatorApi& api, const HttpBinding& binding,
                                        const RestRequest& request) {
    return RestUnary<Req, Resp>(api, body, binding, request, handler);
  };
  return method;
}

// A watch: a server stream, server-sent events over HTTP (no body).
template <typename Req, typename Event>
ApiMethod Stream(std::string name, Role role, std::vector<HttpBinding> http,
                 StreamHandler<Req, Event> handler, std::string (*format)(const Event&)) {
  ApiMethod method = Declare(std::move(name), role, /*streaming=*/true, std::move(http),
                             RestBody::kNone, Req::descriptor());
  method.grpc_handler = [role, handler](const GrpcEnv& env) {
    return GrpcServerStream<Req, Event>(env, role, handler);
  };
  method.rest_handler = [handler, format](CoordinatorApi& api, const HttpBinding& binding,
                                          const RestRequest& request) {
    return RestStream<Req, Event>(api, binding, request, handler, format);
  };
  return method;
}

}  // namespace

const std::vector<ApiMethod>& ApiMethods() {
  using A = CoordinatorApi;
  constexpr Role kRead = Role::kRead, kOp = Role::kOperator;
  constexpr RestBody kNone = RestBody::kNone, kRequest = RestBody::kRequest,
                     kOptional = RestBody::kOptional;
  static const std::vector<ApiMethod>* const methods = new std::vector<ApiMethod>{
      // Runs.
      Unary("CreateRun", kOp, {"POST", "/v1/runs", "Validate and queue a run"}, kRequest,
            &A::CreateRun),
      Unary("GetRun", kRead, {"GET", "/v1/runs/{id}", "Get a run"}, kNone, &A::GetRun),
      Unary("ListRuns", kRead, {"GET", "/v1/runs", "List runs, newest first"}, kNone, &A::ListRuns),
      Unary("CancelRun", kOp, {"POST", "/v1/runs/{id}:cancel", "Cancel a run"}, kOptional,
            &A::CancelRun),
      Unary("DeleteRun", kOp, {"DELETE", "/v1/runs/{id}", "Delete a finished run and its results"},
            kOptional, &A::DeleteRun),
      Stream("WatchRun", kRead,
             {{"GET", "/v1/runs/{id}:watch", "Stream a run's events (server-sent events)"},
              {"GET", "/ui/runs/{id}/events", "Browser: a run's events (server-sent events)",
               /*browser=*/true}},
             &A::WatchRun, &FormatRunEvent),
      Unary("GetRunResults", kRead,
            {"GET", "/v1/runs/{id}/results", "Get a run and its per-size results"}, kNone,
            &A::GetRunResults),
      // Workers.
      Unary("ListWorkers", kRead, {"GET", "/v1/workers", "List workers"}, kNone, &A::ListWorkers),
      Unary("GetWorker", kRead, {"GET", "/v1/workers/{id}", "Get a worker"}, kNone, &A::GetWorker),
      Unary("DrainWorker", kOp, {"POST", "/v1/workers/{id}:drain", "Drain a worker"}, kOptional,
            &A::DrainWorker),
      Unary("UndrainWorker", kOp, {"POST", "/v1/workers/{id}:undrain", "Undrain a worker"},
            kOptional, &A::UndrainWorker),
      Unary("ClearWorker", kOp,
            {"POST", "/v1/workers/{id}:clear",
             "Clear a SUSPECT worker's quarantine (it takes runs again)"},
            kOptional, &A::ClearWorker),
      Unary("DeleteWorker", kOp, {"DELETE", "/v1/workers/{id}", "Delete a worker that is gone"},
            kOptional, &A::DeleteWorker),
      // Workflows.
      Unary("CreateWorkflow", kOp,
            {"POST", "/v1/workflows",
             "Check, plan and queue a workflow (matrix, suite, sweep, advice, report, check, "
             "hunt)"},
            kRequest, &A::CreateWorkflow),
      Unary("GetWorkflow", kRead, {"GET", "/v1/workflows/{id}", "Get a workflow"}, kNone,
            &A::GetWorkflow),
      Unary("ListWorkflows", kRead, {"GET", "/v1/workflows", "List workflows, newest first"}, kNone,
            &A::ListWorkflows),
      Unary("CancelWorkflow", kOp,
            {"POST", "/v1/workflows/{id}:cancel", "Cancel a workflow and its run in progress"},
            kOptional, &A::CancelWorkflow),
      Unary("DeleteWorkflow", kOp,
            {"DELETE", "/v1/workflows/{id}", "Delete a finished workflow (its runs stay)"},
            kOptional, &A::DeleteWorkflow),
      Stream(
          "WatchWorkflow", kRead,
          {{"GET", "/v1/workflows/{id}:watch", "Stream a workflow's versions (server-sent events)"},
           {"GET", "/ui/workflows/{id}/events",
            "Browser: a workflow's versions (server-sent events)", /*browser=*/true}},
          &A::WatchWorkflow, &FormatWorkflowEvent),
      Unary("GetWorkflowReport", kRead,
            {"GET", "/v1/workflows/{id}/report",
             "Get a workflow's HTML report (as JSON: title, html)"},
            kNone, &A::GetWorkflowReport),
      // Baselines.
      Unary("CreateBaseline", kOp,
            {"POST", "/v1/baselines",
             "Keep the distributions of ended runs (or a workflow's runs) as a baseline"},
            kRequest, &A::CreateBaseline),
      Unary("GetBaseline", kRead, {"GET", "/v1/baselines/{id}", "Get a baseline with its entries"},
            kNone, &A::GetBaseline),
      Unary("ListBaselines", kRead,
            {"GET", "/v1/baselines", "List baselines by name (without their entries)"}, kNone,
            &A::ListBaselines),
      Unary("DeleteBaseline", kOp,
            {"DELETE", "/v1/baselines/{id}", "Delete a baseline (its runs stay)"}, kNone,
            &A::DeleteBaseline),
      // Schedules.
      Unary("CreateSchedule", kOp,
            {"POST", "/v1/schedules",
             "Check and store a schedule: a suite or run fired every period and checked "
             "against a baseline"},
            kRequest, &A::CreateSchedule),
      Unary("GetSchedule", kRead,
            {"GET", "/v1/schedules/{id}", "Get a schedule with its recent firings"}, kNone,
            &A::GetSchedule),
      Unary("ListSchedules", kRead, {"GET", "/v1/schedules", "List schedules by name"}, kNone,
            &A::ListSchedules),
      Unary("PauseSchedule", kOp,
            {"POST", "/v1/schedules/{id}:pause", "Pause a schedule (a running firing goes on)"},
            kNone, &A::PauseSchedule),
      Unary("ResumeSchedule", kOp,
            {"POST", "/v1/schedules/{id}:resume", "Resume a schedule (next firing a period on)"},
            kNone, &A::ResumeSchedule),
      Unary("DeleteSchedule", kOp,
            {"DELETE", "/v1/schedules/{id}",
             "Delete a schedule (its workflows and runs stay; a running firing is cancelled)"},
            kNone, &A::DeleteSchedule),
  };
  return *methods;
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
#include "server/services/coordinator_service.h"

#include <utility>

#include "absl/time/clock.h"
#include "api/status_mapping.h"
#include "server/services/unary_reply.h"
#include "server/core/admission.h"
#include "server/core/listing.h"
#include "server/services/watch_reactor.h"

namespace collbench {
namespace {

using service_reply::AuthorizationOf;
using service_reply::Fail;
using service_reply::Reply;

// Ends a WatchRun that may not start.
class RefusedWatch final : public grpc::ServerWriteReactor<v1::RunEvent> {
 public:
  explicit RefusedWatch(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

absl::Status CoordinatorService::Authorize(const grpc::CallbackServerContext* context,
                                           Role needed) const {
  return authorizer_->Check(AuthorizationOf(context), needed);
}

grpc::ServerUnaryReactor* CoordinatorService::Refuse(grpc::CallbackServerContext* context,
                                                     Role needed) const {
  const absl::Status allowed = Authorize(context, needed);
  return allowed.ok() ? nullptr : Fail(context, allowed);
}

grpc::ServerUnaryReactor* CoordinatorService::CreateRun(grpc::CallbackServerContext* context,
                                                        const v1::CreateRunRequest* request,
                                                        v1::Run* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  const absl::StatusOr<v1::Run> run =
      manager_->CreateRun(request->spec(), request->request_id(), absl::Now(),
                          authorizer_->CallerOf(AuthorizationOf(context), context->peer()));
  // Refused by admission control: the wait also as trailing metadata, as
  // HTTP's Retry-After.
  if (const std::optional<int64_t> retry_s = RetryAfterSeconds(run.status())) {
    context->AddTrailingMetadata("retry-after", std::to_string(*retry_s));
  }
  return Reply(context, run, response);
}

grpc::ServerUnaryReactor* CoordinatorService::GetRun(grpc::CallbackServerContext* context,
                                                     const v1::GetRunRequest* request,
                                                     v1::Run* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  return Reply(context, manager_->GetRun(request->name()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::ListRuns(grpc::CallbackServerContext* context,
                                                       const v1::ListRunsRequest* request,
                                                       v1::ListRunsResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  return Reply(context, ListRunsPage(*manager_, *request), response);
}

grpc::ServerUnaryReactor* CoordinatorService::CancelRun(grpc::CallbackServerContext* context,
                                                        const v1::CancelRunRequest* request,
                                                        v1::Run* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  return Reply(context, manager_->CancelRun(request->name(), absl::Now()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::DeleteRun(grpc::CallbackServerContext* context,
                                                        const v1::DeleteRunRequest* request,
                                                        google::protobuf::Empty* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  return Fail(context, manager_->DeleteRun(request->name()));
}

grpc::ServerWriteReactor<v1::RunEvent>* CoordinatorService::WatchRun(
    grpc::CallbackServerContext* context, const v1::WatchRunRequest* request) {
  if (absl::Status allowed = Authorize(context, Role::kRead); !allowed.ok()) {
    return new RefusedWatch(allowed);
  }
  absl::StatusOr<std::unique_ptr<WatcherSlot>> slot =
      limits_->Acquire(authorizer_->CallerOf(AuthorizationOf(context), context->peer()));
  if (!slot.ok()) return new RefusedWatch(slot.status());
  return NewWatchReactor(manager_, hub_, limits_, *std::move(slot), request->name());
}

grpc::ServerUnaryReactor* CoordinatorService::GetRunResults(
    grpc::CallbackServerContext* context, const v1::GetRunResultsRequest* request,
    v1::GetRunResultsResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  absl::StatusOr<v1::Run> run = manager_->GetRun(request->name());
  if (!run.ok()) return Fail(context, run.status());
  absl::StatusOr<std::vector<v1::SizeResult>> results = manager_->GetResults(run->name());
  if (!results.ok()) return Fail(context, results.status());
  *response->mutable_run() = *std::move(run);
  for (v1::SizeResult& r : *results) *response->add_results() = std::move(r);
  return Fail(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* CoordinatorService::ListWorkers(grpc::CallbackServerContext* context,
                                                          const v1::ListWorkersRequest* request,
                                                          v1::ListWorkersResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  return Reply(context, ListWorkersPage(*manager_, *request), response);
}

grpc::ServerUnaryReactor* CoordinatorService::GetWorker(grpc::CallbackServerContext* context,
                                                        const v1::GetWorkerRequest* request,
                                                        v1::Worker* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  return Reply(context, manager_->GetWorker(request->name()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::DrainWorker(grpc::CallbackServerContext* context,
                                                          const v1::DrainWorkerRequest* request,
                                                          v1::Worker* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  return Reply(context, manager_->DrainWorker(request->name()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::UndrainWorker(grpc::CallbackServerContext* context,
                                                            const v1::UndrainWorkerRequest* request,
                                                            v1::Worker* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  return Reply(context, manager_->UndrainWorker(request->name(), absl::Now()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::ClearWorker(grpc::CallbackServerContext* context,
                                                          const v1::ClearWorkerRequest* request,
                                                          v1::Worker* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  return Reply(context, manager_->ClearWorker(request->name(), "by an operator", absl::Now()),
               response);
}

grpc::ServerUnaryReactor* CoordinatorService::DeleteWorker(grpc::CallbackServerContext* context,
                                                           const v1::DeleteWorkerRequest* request,
                                                           google::protobuf::Empty* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  return Fail(context, manager_->ForgetWorker(request->name()));
}

}  // namespace collbench

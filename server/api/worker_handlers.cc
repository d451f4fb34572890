// SPDX-License-Identifier: Apache-2.0
// The worker methods: thin translations onto RunManager.
#include "common/status_macros.h"
#include "server/api/handlers.h"
#include "server/core/listing.h"

namespace collbench {

absl::StatusOr<v1::ListWorkersResponse> CoordinatorApi::ListWorkers(
    const CallContext& call, const v1::ListWorkersRequest& request) {
  return ListWorkersPage(*parts_.runs, request);
}

absl::StatusOr<v1::Worker> CoordinatorApi::GetWorker(const CallContext& call,
                                                     const v1::GetWorkerRequest& request) {
  return parts_.runs->GetWorker(request.name());
}

absl::StatusOr<v1::Worker> CoordinatorApi::DrainWorker(const CallContext& call,
                                                       const v1::DrainWorkerRequest& request) {
  return parts_.runs->DrainWorker(request.name());
}

absl::StatusOr<v1::Worker> CoordinatorApi::UndrainWorker(const CallContext& call,
                                                         const v1::UndrainWorkerRequest& request) {
  return parts_.runs->UndrainWorker(request.name(), parts_.clock->Now());
}

absl::StatusOr<v1::Worker> CoordinatorApi::ClearWorker(const CallContext& call,
                                                       const v1::ClearWorkerRequest& request) {
  return parts_.runs->ClearWorker(request.name(), "by an operator", parts_.clock->Now());
}

absl::StatusOr<google::protobuf::Empty> CoordinatorApi::DeleteWorker(
    const CallContext& call, const v1::DeleteWorkerRequest& request) {
  RETURN_IF_ERROR(parts_.runs->ForgetWorker(request.name()));
  return google::protobuf::Empty();
}

}  // namespace collbench

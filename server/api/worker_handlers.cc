// SPDX-License-Identifier: Apache-2.0
// The worker methods: thin translations onto the Fleet.
#include "common/status_macros.h"
#include "server/api/handlers.h"
#include "server/core/listing.h"

namespace collbench {

absl::StatusOr<v1::ListWorkersResponse> CoordinatorApi::ListWorkers(
    const CallContext& call, const v1::ListWorkersRequest& request) {
  return ListWorkersPage(*parts_.fleet, request);
}

absl::StatusOr<v1::Worker> CoordinatorApi::GetWorker(const CallContext& call,
                                                     const v1::GetWorkerRequest& request) {
  return parts_.fleet->GetWorker(request.name());
}

absl::StatusOr<v1::Worker> CoordinatorApi::DrainWorker(const CallContext& call,
                                                       const v1::DrainWorkerRequest& request) {
  return parts_.fleet->DrainWorker(request.name());
}

absl::StatusOr<v1::Worker> CoordinatorApi::UndrainWorker(const CallContext& call,
                                                         const v1::UndrainWorkerRequest& request) {
  return parts_.fleet->UndrainWorker(request.name(), parts_.clock->Now());
}

absl::StatusOr<v1::Worker> CoordinatorApi::ClearWorker(const CallContext& call,
                                                       const v1::ClearWorkerRequest& request) {
  return parts_.fleet->ClearWorker(request.name(), "by an operator", parts_.clock->Now());
}

absl::StatusOr<google::protobuf::Empty> CoordinatorApi::DeleteWorker(
    const CallContext& call, const v1::DeleteWorkerRequest& request) {
  RETURN_IF_ERROR(parts_.fleet->ForgetWorker(request.name()));
  return google::protobuf::Empty();
}

}  // namespace collbench

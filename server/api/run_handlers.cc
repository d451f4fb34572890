// SPDX-License-Identifier: Apache-2.0
// The run methods: thin translations onto RunManager.
#include <string>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "server/api/handlers.h"
#include "server/core/listing.h"

namespace collbench {

absl::StatusOr<v1::Run> CoordinatorApi::CreateRun(const CallContext& call,
                                                  const v1::CreateRunRequest& request) {
  if (!request.has_spec()) return absl::InvalidArgumentError("spec: is required");
  return parts_.runs->CreateRun(request.spec(), request.request_id(), parts_.clock->Now(),
                                call.caller);
}

absl::StatusOr<v1::Run> CoordinatorApi::GetRun(const CallContext& call,
                                               const v1::GetRunRequest& request) {
  return parts_.runs->GetRun(request.name());
}

absl::StatusOr<v1::ListRunsResponse> CoordinatorApi::ListRuns(const CallContext& call,
                                                              const v1::ListRunsRequest& request) {
  return ListRunsPage(*parts_.runs, request);
}

absl::StatusOr<v1::Run> CoordinatorApi::CancelRun(const CallContext& call,
                                                  const v1::CancelRunRequest& request) {
  return parts_.runs->CancelRun(request.name(), parts_.clock->Now());
}

absl::StatusOr<google::protobuf::Empty> CoordinatorApi::DeleteRun(
    const CallContext& call, const v1::DeleteRunRequest& request) {
  RETURN_IF_ERROR(parts_.runs->DeleteRun(request.name()));
  return google::protobuf::Empty();
}

absl::StatusOr<v1::GetRunResultsResponse> CoordinatorApi::GetRunResults(
    const CallContext& call, const v1::GetRunResultsRequest& request) {
  ASSIGN_OR_RETURN(v1::Run run, parts_.runs->GetRun(request.name()));
  ASSIGN_OR_RETURN(std::vector<v1::SizeResult> results, parts_.runs->GetResults(run.name()));
  v1::GetRunResultsResponse response;
  *response.mutable_run() = std::move(run);
  for (v1::SizeResult& result : results) *response.add_results() = std::move(result);
  return response;
}

absl::StatusOr<std::shared_ptr<Watch<v1::RunEvent>>> CoordinatorApi::WatchRun(
    const CallContext& call, const v1::WatchRunRequest& request) {
  ASSIGN_OR_RETURN(std::unique_ptr<WatcherSlot> slot, AcquireWatcher(call));
  ASSIGN_OR_RETURN(
      std::shared_ptr<RunWatch> watch,
      RunWatch::Open(*parts_.runs, *parts_.hub, request.name(), parts_.watchers, std::move(slot)));
  return watch;
}

absl::StatusOr<std::unique_ptr<WatcherSlot>> CoordinatorApi::AcquireWatcher(
    const CallContext& call) {
  if (parts_.watchers == nullptr) return std::unique_ptr<WatcherSlot>();
  return parts_.watchers->Acquire(call.caller);
}

}  // namespace collbench

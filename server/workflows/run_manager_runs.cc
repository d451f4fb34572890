// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/run_manager_runs.h"

#include <utility>

namespace collbench {

absl::StatusOr<v1::Run> RunManagerRuns::CreateRun(const v1::RunSpec& spec,
                                                  const std::string& request_id, absl::Time now,
                                                  absl::string_view caller) {
  return runs_->CreateRun(spec, request_id, now, caller);
}

std::vector<absl::StatusOr<v1::Run>> RunManagerRuns::CreateRuns(
    const std::vector<Request>& requests, absl::Time now, absl::string_view caller) {
  std::vector<RunManager::RunRequest> group;
  group.reserve(requests.size());
  for (const Request& request : requests) group.push_back({request.spec, request.request_id});
  return runs_->CreateRuns(group, now, caller);
}

absl::Status RunManagerRuns::CheckRun(const v1::RunSpec& spec) { return runs_->CheckRun(spec); }

absl::StatusOr<v1::Run> RunManagerRuns::GetRun(absl::string_view name) {
  return runs_->GetRun(name);
}

absl::StatusOr<std::vector<v1::SizeResult>> RunManagerRuns::GetResults(absl::string_view name) {
  return runs_->GetResults(name);
}

absl::StatusOr<v1::Run> RunManagerRuns::CancelRun(absl::string_view name, absl::Time now) {
  return runs_->CancelRun(name, now);
}

void RunManagerRuns::Subscribe(const std::string& run, std::shared_ptr<RunEventSink> sink) {
  hub_->Subscribe(run, std::move(sink));
}

void RunManagerRuns::Unsubscribe(const std::string& run, const RunEventSink* sink) {
  hub_->Unsubscribe(run, sink);
}

absl::Status RunManagerRuns::WorkersIdle(absl::string_view selector) {
  return runs_->WorkersIdle(selector);
}

std::vector<v1::Worker> RunManagerRuns::ListWorkers() { return fleet_->ListWorkers(); }

absl::StatusOr<v1::Worker> RunManagerRuns::GetWorker(absl::string_view name) {
  return fleet_->GetWorker(name);
}

absl::StatusOr<v1::Worker> RunManagerRuns::SuspectWorker(absl::string_view name,
                                                         const v1::WorkerSuspicion& why) {
  return fleet_->SuspectWorker(name, why);
}

absl::StatusOr<v1::Worker> RunManagerRuns::ClearWorker(absl::string_view name,
                                                       absl::string_view by, absl::Time now) {
  return fleet_->ClearWorker(name, by, now);
}

}  // namespace collbench

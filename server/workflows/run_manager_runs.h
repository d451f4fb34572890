// SPDX-License-Identifier: Apache-2.0
// WorkflowRuns (workflow_runs.h) over the coordinator's core (its run
// lifecycle and its fleet) and the watch hub: every call forwards, nothing
// is kept here, so pointing the workflows at another owner of runs or
// workers is a change of this file alone.
//
// Thread safety: as the RunManager, the Fleet and the WatchHub (any
// thread).
#ifndef COLLBENCH_SERVER_WORKFLOWS_RUN_MANAGER_RUNS_H_
#define COLLBENCH_SERVER_WORKFLOWS_RUN_MANAGER_RUNS_H_

#include <memory>
#include <string>
#include <vector>

#include "server/core/fleet.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/workflows/workflow_runs.h"

namespace collbench {

class RunManagerRuns final : public WorkflowRuns {
 public:
  // None is owned; all outlive this object. `hub` is the one `runs`
  // publishes on.
  RunManagerRuns(RunManager* runs, Fleet* fleet, WatchHub* hub)
      : runs_(runs), fleet_(fleet), hub_(hub) {}

  absl::StatusOr<v1::Run> CreateRun(const v1::RunSpec& spec, const std::string& request_id,
                                    absl::Time now, absl::string_view caller) override;
  std::vector<absl::StatusOr<v1::Run>> CreateRuns(const std::vector<Request>& requests,
                                                  absl::Time now,
                                                  absl::string_view caller) override;
  absl::Status CheckRun(const v1::RunSpec& spec) override;
  absl::StatusOr<v1::Run> GetRun(absl::string_view name) override;
  absl::StatusOr<std::vector<v1::SizeResult>> GetResults(absl::string_view name) override;
  absl::StatusOr<v1::Run> CancelRun(absl::string_view name, absl::Time now) override;
  void Subscribe(const std::string& run, std::shared_ptr<RunEventSink> sink) override;
  void Unsubscribe(const std::string& run, const RunEventSink* sink) override;
  absl::Status WorkersIdle(absl::string_view selector) override;
  std::vector<v1::Worker> ListWorkers() override;
  absl::StatusOr<v1::Worker> GetWorker(absl::string_view name) override;
  absl::StatusOr<v1::Worker> SuspectWorker(absl::string_view name,
                                           const v1::WorkerSuspicion& why) override;
  absl::StatusOr<v1::Worker> ClearWorker(absl::string_view name, absl::string_view by,
                                         absl::Time now) override;

 private:
  RunManager* const runs_;
  Fleet* const fleet_;
  WatchHub* const hub_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_RUN_MANAGER_RUNS_H_

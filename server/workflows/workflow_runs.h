// SPDX-License-Identifier: Apache-2.0
// The runs as workflows see them (docs/design/workflows.md#execution-and-restarts):
// the calls the workflow and schedule managers make of the run lifecycle,
// and nothing else. Declared here, by its consumer; implemented over the
// RunManager by RunManagerRuns (run_manager_runs.h), and by a fake in
// tests (tests/unit/fakes/fake_workflow_runs.h) that creates, ends and
// publishes runs when a test says so.
//
// The calls mean what RunManager's of the same name mean
// (server/core/run_manager.h), errors included: CreateRun and CreateRuns
// give back the run made earlier under the same request id (a restarted
// workflow adopts its runs so), and refuse with ResourceExhausted and a
// retry-after past the caller's create rate or the queue's length.
//
// Events: Subscribe() registers a sink for one run's events (its state
// changes, results, progress, log lines) from then on; OnEnd() follows the
// run's last event, or comes when the coordinator shuts down. A subscriber
// that must not miss a change subscribes first, then reads the run. Sinks
// are called from any thread, possibly while the run owner holds its own
// locks: a sink takes only locks of its own that it never holds while
// calling in here, and does no I/O.
//
// Thread safety: every method may be called from any thread, with none of
// the caller's locks held (an implementation may call sinks from inside).
#ifndef COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_RUNS_H_
#define COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_RUNS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"
#include "server/core/watch_hub.h"

namespace collbench {

class WorkflowRuns {
 public:
  virtual ~WorkflowRuns() = default;

  // One run of a group (CreateRuns).
  struct Request {
    v1::RunSpec spec;
    std::string request_id;
  };

  // --- Making and reading runs --------------------------------------------
  // Checks and queues one run; `caller` (the workflow's name) keys the
  // create rate.
  virtual absl::StatusOr<v1::Run> CreateRun(const v1::RunSpec& spec,
                                            const std::string& request_id, absl::Time now,
                                            absl::string_view caller) = 0;
  // A group admitted together (a hunt's round): one answer per request, in
  // order.
  virtual std::vector<absl::StatusOr<v1::Run>> CreateRuns(const std::vector<Request>& requests,
                                                          absl::Time now,
                                                          absl::string_view caller) = 0;
  // What CreateRun would refuse of `spec` (InvalidArgument naming the
  // field), with nothing queued: every cell is checked at plan time.
  virtual absl::Status CheckRun(const v1::RunSpec& spec) = 0;
  virtual absl::StatusOr<v1::Run> GetRun(absl::string_view name) = 0;
  virtual absl::StatusOr<std::vector<v1::SizeResult>> GetResults(absl::string_view name) = 0;
  // FailedPrecondition when the run has ended already.
  virtual absl::StatusOr<v1::Run> CancelRun(absl::string_view name, absl::Time now) = 0;

  // --- Events --------------------------------------------------------------
  virtual void Subscribe(const std::string& run, std::shared_ptr<RunEventSink> sink) = 0;
  virtual void Unsubscribe(const std::string& run, const RunEventSink* sink) = 0;

  // --- Workers -------------------------------------------------------------
  // OK when no run is queued and none holds a worker the selector selects;
  // Unavailable naming the run in the way otherwise (a scheduled firing
  // never goes ahead of a user's run).
  virtual absl::Status WorkersIdle(absl::string_view selector) = 0;
  virtual std::vector<v1::Worker> ListWorkers() = 0;
  virtual absl::StatusOr<v1::Worker> GetWorker(absl::string_view name) = 0;
  // A hunt's quarantine: SUSPECT with why, and cleared when measured
  // healthy.
  virtual absl::StatusOr<v1::Worker> SuspectWorker(absl::string_view name,
                                                   const v1::WorkerSuspicion& why) = 0;
  virtual absl::StatusOr<v1::Worker> ClearWorker(absl::string_view name, absl::string_view by,
                                                 absl::Time now) = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_RUNS_H_

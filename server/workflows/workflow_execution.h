// SPDX-License-Identifier: Apache-2.0
// What the WorkflowManager keeps of a workflow while it holds one of the
// `max_running` slots (docs/design/workflows.md#execution-and-restarts), and
// the run event sink that wakes it. Internal to server/workflows.
//
// Thread safety: a WorkflowExecution's `followed` and `wake_at` are read
// and written under WorkflowManager::mu_; its `hunt` only by the thread
// advancing the workflow (one at a time). Waker and RunSink may be called
// from any thread, with the run owner's locks held.
#ifndef COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_EXECUTION_H_
#define COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_EXECUTION_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/hunt.pb.h"
#include "server/core/watch_hub.h"
#include "server/workflows/hunts.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

// A hunt between its rounds: where it is in its phases and what it has
// measured. Rebuilt after a restart by running the rounds again, whose
// runs' request ids ("<workflow>/round-<r>-<i>") adopt those already made.
struct HuntExecution {
  enum class Phase { kSurvey, kRepeat, kRetest };
  HuntExecution(const v1::HuntSpec& spec, std::vector<v1::HuntWorker> selected)
      : spec(spec), selected(std::move(selected)), survey_plan(spec, this->selected) {}

  const v1::HuntSpec spec;
  const std::vector<v1::HuntWorker> selected;
  const workflows::SurveyPlan survey_plan;
  Phase phase = Phase::kSurvey;
  size_t phase_round = 0;  // the next round of the phase
  int round = 0;           // rounds opened so far, all phases
  std::vector<v1::HuntMeasurement> survey, repeats, retests, set_aside;
  std::vector<std::string> stragglers;  // behind in a ring run
  workflows::HuntSurvey analysed;
  std::vector<workflows::HuntRound> repeat_rounds;

  // The round in progress.
  bool round_open = false;
  workflows::HuntRound planned;
  std::vector<std::string> runs;  // by cell; "" until made (or never accepted)
  std::vector<size_t> to_create;  // cells whose run is not made yet
  std::vector<bool> ended;        // by cell
  bool cancel_sent = false;
};

struct WorkflowExecution {
  std::shared_ptr<RunEventSink> sink;  // this workflow's, for every run it follows
  std::set<std::string> followed;      // runs subscribed to
  // The next Tick at or after this wakes the workflow (it waits for idle
  // workers, a refused create's retry, or a hunt's queued runs).
  absl::Time wake_at = absl::InfiniteFuture();
  std::unique_ptr<HuntExecution> hunt;
};

// What run sinks hold of the manager: Detach() (in Stop) makes every later
// event a no-op, and waits for a wake in progress.
class WorkflowManager::Waker {
 public:
  explicit Waker(WorkflowManager* manager) : manager_(manager) {}
  void Wake(const std::string& workflow) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (manager_ != nullptr) manager_->Wake(workflow);
  }
  void Detach() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    manager_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  WorkflowManager* manager_ ABSL_GUARDED_BY(mu_);
};

// A workflow's sink for the runs it follows: a state change, or the run's
// end, wakes it. Results, progress and log lines do not.
class WorkflowManager::RunSink final : public RunEventSink {
 public:
  RunSink(std::shared_ptr<Waker> waker, std::string workflow)
      : waker_(std::move(waker)), workflow_(std::move(workflow)) {}
  void OnEvent(const v1::RunEvent& event) override {
    if (event.has_state_change()) waker_->Wake(workflow_);
  }
  void OnEnd() override { waker_->Wake(workflow_); }

 private:
  const std::shared_ptr<Waker> waker_;
  const std::string workflow_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_WORKFLOW_EXECUTION_H_

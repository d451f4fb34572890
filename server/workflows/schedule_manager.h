// SPDX-License-Identifier: Apache-2.0
// Scheduled checks (docs/design/workflows.md#schedules): the coordinator fires each schedule every
// period. A firing waits (up to its window) for the workers to be idle,
// then runs as an ordinary workflow (the suite, or a matrix of the one
// run) whose runs are labelled with the schedule, queued behind every user
// run, and checked against the schedule's baseline. A firing whose workers
// stay busy is recorded as skipped, with the reason.
//
// Stored: every change is written through, so schedules survive restarts.
// A firing due while the coordinator was down is made once when it comes
// back, the next a period later (the periods missed are not made up); a
// firing the fleet cannot take yet (workers not back) is tried again until
// its window ends. A firing that was running
// goes on with its workflow (the workflow's request id is the schedule's
// and the due time, so a restart never makes a second one).
//
// A firing's workflow carries everything it needs in its spec (the
// baseline and its threshold, the worker selector, the schedule label), so
// the workflow manager never calls back here. Time: the coordinator's
// ticker calls Tick(now) every `tick`; nothing here reads a clock or waits.
//
// Thread safety: every method may be called from any thread. One mutex
// guards the schedules; the workflow manager and the runs are called
// without it.
#ifndef COLLBENCH_SERVER_WORKFLOWS_SCHEDULE_MANAGER_H_
#define COLLBENCH_SERVER_WORKFLOWS_SCHEDULE_MANAGER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/schedule.pb.h"
#include "server/store/store.h"
#include "server/workflows/workflow_manager.h"
#include "server/workflows/workflow_runs.h"

namespace collbench {

struct ScheduleManagerOptions {
  // The shortest period a schedule may have (--min-schedule-period).
  absl::Duration min_period = absl::Seconds(60);
  // How often the coordinator's ticker calls Tick (due schedules and
  // running firings are looked at).
  absl::Duration tick = absl::Seconds(1);
  int max_schedules = 100;
};

class ScheduleManager {
 public:
  // None of the pointers is owned; all outlive the manager.
  ScheduleManager(Store* store, WorkflowRuns* runs, WorkflowManager* workflows,
                  ScheduleManagerOptions options);

  // Loads the stored schedules. Call after the WorkflowManager has started.
  absl::Status Start();
  // Later ticks do nothing. Idempotent.
  void Stop();

  // Checks everything a firing will need (InvalidArgument naming the
  // field: the id, the period, the suite or run spec as a workflow would
  // plan it, the baseline, the worker selector); nothing is stored for
  // validate_only. The first firing is due at once.
  absl::StatusOr<v1::Schedule> Create(const v1::CreateScheduleRequest& request, absl::Time now,
                                      absl::string_view caller = "");
  absl::StatusOr<v1::Schedule> Get(absl::string_view name);
  std::vector<v1::Schedule> List();
  // A paused schedule makes no firing (one running goes on); resuming
  // makes the next one due after a period from now.
  absl::StatusOr<v1::Schedule> Pause(absl::string_view name, absl::Time now);
  absl::StatusOr<v1::Schedule> Resume(absl::string_view name, absl::Time now);
  // Forgets the schedule (its workflows and runs stay); a running firing's
  // workflow is cancelled.
  absl::Status Delete(absl::string_view name, absl::Time now);

  // The schedules' metrics (server/metrics/schedule_metrics.h), read at
  // scrape time.
  std::string MetricsText();

  // One pass: fires what is due, follows running firings. The
  // coordinator's ticker calls it every `tick`; tests with their own time.
  void Tick(absl::Time now);

 private:
  // The firing in progress (history(0)) if it has not ended.
  static bool Running(const v1::Schedule& schedule);
  v1::WorkflowSpec FiringSpec(const v1::Schedule& schedule) const;
  absl::Status Validate(const v1::ScheduleSpec& spec);
  absl::Duration Window(const v1::Schedule& schedule) const;
  void SaveLocked(v1::Schedule& schedule) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Advances one schedule; may create or read a workflow (without mu_).
  void Step(const std::string& name, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // A firing waiting for idle workers: its workflow made, or the firing
  // skipped once its window has passed.
  void StartFiring(const v1::Schedule& schedule, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // A running firing: its outcome once its workflow has ended.
  void FollowFiring(const v1::Schedule& schedule, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Applies `change` to the schedule as it is now, and stores it (nothing
  // when it was deleted meanwhile). `change` runs under mu_.
  void Apply(const std::string& name, const std::function<void(v1::Schedule&)>& change)
      ABSL_LOCKS_EXCLUDED(mu_);

  Store* const store_;
  WorkflowRuns* const runs_;
  WorkflowManager* const workflows_;
  const ScheduleManagerOptions options_;
  absl::Mutex mu_;
  std::map<std::string, v1::Schedule> schedules_ ABSL_GUARDED_BY(mu_);
  // The last check of each schedule, for the metrics.
  std::map<std::string, v1::CheckOutput> last_checks_ ABSL_GUARDED_BY(mu_);
  // Firings ended since this process started, by schedule and outcome
  // (collbench_schedule_firings_total: a counter, from 0 at each start).
  std::map<std::string, std::map<std::string, int64_t>> outcomes_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_WORKFLOWS_SCHEDULE_MANAGER_H_

// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/schedule_manager.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "api/capabilities.h"
#include "analysis/run_set.h"
#include "api/convert.h"
#include "common/log.h"
#include "common/units.h"
#include "server/core/run_manager.h"  // kScheduleLabel
#include "server/metrics/schedule_metrics.h"
#include "server/workflows/checks.h"

namespace collbench {
namespace {

constexpr int kHistory = 50;
constexpr absl::Duration kMaxDefaultWindow = absl::Minutes(10);

std::string NameOf(absl::string_view text) {
  return absl::StartsWith(text, "schedules/") ? std::string(text) : absl::StrCat("schedules/", text);
}

absl::Status NotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("schedule ", NameOf(name), " not found"));
}

// A hunt's findings that count as a firing's regressions: its CONFIRMED_BAD,
// RACK_SUSPECT and LINK_SUSPECT verdicts (an INCONCLUSIVE one did not
// reproduce).
int CountHuntFindings(const v1::Workflow& workflow) {
  int found = 0;
  for (const v1::HuntSuspect& s : workflow.output().hunt().suspects()) {
    found += s.verdict() == "CONFIRMED_BAD" || s.verdict() == "RACK_SUSPECT" ||
                     s.verdict() == "LINK_SUSPECT"
                 ? 1
                 : 0;
  }
  return found;
}

std::string OutcomeOf(const v1::Workflow& workflow) {
  switch (workflow.state()) {
    case v1::WORKFLOW_SUCCEEDED:
      return workflow.output().check().regressed() || CountHuntFindings(workflow) > 0 ? "regression"
                                                                                 : "succeeded";
    case v1::WORKFLOW_CANCELLED:
      return "cancelled";
    default:
      return "failed";
  }
}

}  // namespace

ScheduleManager::ScheduleManager(Store* store, WorkflowRuns* runs, WorkflowManager* workflows,
                                 ScheduleManagerOptions options)
    : store_(store), runs_(runs), workflows_(workflows), options_(options) {}

absl::Status ScheduleManager::Start() {
  absl::StatusOr<std::vector<v1::Schedule>> stored = store_->ListSchedules();
  if (!stored.ok()) return stored.status();
  // The last check of each schedule, for collbench_check_ratio: from the
  // newest firing that checked.
  std::map<std::string, v1::CheckOutput> checks;
  for (const v1::Schedule& schedule : *stored) {
    for (const v1::ScheduleFiring& firing : schedule.history()) {
      if (firing.outcome() != "succeeded" && firing.outcome() != "regression") continue;
      absl::StatusOr<v1::Workflow> workflow = workflows_->Get(firing.workflow());
      if (workflow.ok() && workflow->output().has_check()) {
        checks[schedule.name()] = workflow->output().check();
      }
      break;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    for (v1::Schedule& schedule : *stored) {
      LogInfo("schedule.recovered").Str("schedule", schedule.name());
      schedules_[schedule.name()] = std::move(schedule);
    }
    last_checks_ = std::move(checks);
  }
  return absl::OkStatus();
}

void ScheduleManager::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

bool ScheduleManager::Running(const v1::Schedule& schedule) {
  if (schedule.history_size() == 0) return false;
  const std::string& outcome = schedule.history(0).outcome();
  return outcome == "waiting" || outcome == "running";
}

absl::Duration ScheduleManager::Window(const v1::Schedule& schedule) const {
  if (schedule.spec().window_seconds() > 0) return absl::Seconds(schedule.spec().window_seconds());
  return std::min(absl::Seconds(schedule.spec().every_seconds()) / 4, kMaxDefaultWindow);
}

v1::WorkflowSpec ScheduleManager::FiringSpec(const v1::Schedule& schedule) const {
  const v1::ScheduleSpec& spec = schedule.spec();
  v1::WorkflowSpec workflow;
  if (spec.has_suite()) {
    *workflow.mutable_suite() = spec.suite();
  } else if (spec.has_hunt()) {
    *workflow.mutable_hunt() = spec.hunt();
  } else {
    // The one run, as a matrix of one combination (its own operation,
    // placement, transport and library).
    v1::MatrixSpec* matrix = workflow.mutable_matrix();
    *matrix->mutable_base() = spec.run();
    matrix->add_operations(spec.run().operation());
    matrix->add_placements(PlacementName(spec.run().placement()));
    matrix->add_transports(TransportName(spec.run().transport()));
    matrix->add_mpis(MpiName(spec.run().mpi()));
  }
  workflow.set_baseline(spec.baseline());
  // The check's threshold travels with the firing: the workflow needs
  // nothing of the schedule when it ends.
  if (!spec.baseline().empty()) workflow.set_baseline_threshold(spec.threshold());
  workflow.set_schedule(schedule.name());
  workflow.set_workers(spec.workers());
  (*workflow.mutable_labels())[kScheduleLabel] =
      std::string(absl::StripPrefix(schedule.name(), "schedules/"));
  return workflow;
}

absl::Status ScheduleManager::Validate(const v1::ScheduleSpec& spec) {
  if (spec.every_seconds() < absl::ToInt64Seconds(options_.min_period)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.every_seconds: ", spec.every_seconds(), " is below the shortest period, ",
        absl::ToInt64Seconds(options_.min_period), " (--min-schedule-period)"));
  }
  if (spec.window_seconds() < 0 || spec.window_seconds() > spec.every_seconds()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.window_seconds: ", spec.window_seconds(), " is not within 0..every_seconds (",
        spec.every_seconds(), ")"));
  }
  if (spec.threshold() < 0 || spec.threshold() >= 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.threshold: ", spec.threshold(), " is not a fraction in [0, 10)"));
  }
  if (!spec.has_suite() && !spec.has_run() && !spec.has_hunt()) {
    return absl::InvalidArgumentError("spec: set suite, run or hunt (what each firing runs)");
  }
  if (spec.has_hunt() && !spec.baseline().empty()) {
    return absl::InvalidArgumentError(
        "spec.baseline: a hunt compares the workers with each other, not with a baseline");
  }
  if (spec.has_run() && spec.run().placement().policy() == v1::EXPLICIT) {
    return absl::InvalidArgumentError(
        "spec.run.placement: a schedule picks its workers with spec.workers (a selector), not an "
        "explicit placement");
  }
  return ValidateWorkerSelector(spec.workers(), "spec.workers");
}

absl::StatusOr<v1::Schedule> ScheduleManager::Create(const v1::CreateScheduleRequest& request,
                                                     absl::Time now, absl::string_view caller) {
  absl::StatusOr<std::string> name =
      workflows::ResourceName(request.schedule_id(), "schedules", "schedule", "schedule_id");
  if (!name.ok()) return name.status();
  const std::string id(absl::StripPrefix(*name, "schedules/"));
  if (absl::Status valid = Validate(request.spec()); !valid.ok()) return valid;
  v1::Schedule schedule;
  schedule.set_name(*name);
  *schedule.mutable_spec() = request.spec();
  *schedule.mutable_create_time() = TimestampFromTime(now);
  *schedule.mutable_next_fire_time() = TimestampFromTime(now);
  // A firing is planned now as it will be then: a suite that does not
  // exist, a run the workers cannot make, an unknown baseline are refused
  // here, with the field a workflow names.
  v1::CreateWorkflowRequest plan;
  *plan.mutable_spec() = FiringSpec(schedule);
  plan.set_validate_only(true);
  absl::StatusOr<v1::Workflow> planned = workflows_->Create(plan, now, caller);
  if (!planned.ok()) {
    std::string message(planned.status().message());
    if (absl::StartsWith(message, "spec.matrix.base")) {
      message = absl::StrCat("spec.run", message.substr(strlen("spec.matrix.base")));
    }
    return absl::Status(planned.status().code(), message);
  }
  if (request.validate_only()) return schedule;
  absl::MutexLock lock(&mu_);
  if (schedules_.count(schedule.name()) > 0) {
    return absl::AlreadyExistsError(absl::StrCat(
        schedule.name(), " exists; delete it first (collbench schedule delete ", id, ")"));
  }
  if (static_cast<int>(schedules_.size()) >= options_.max_schedules) {
    return absl::ResourceExhaustedError(
        absl::StrCat("at most ", options_.max_schedules, " schedules; delete one first"));
  }
  if (absl::Status stored = store_->PutSchedule(schedule); !stored.ok()) return stored;
  schedules_[schedule.name()] = schedule;
  LogInfo("schedule.created")
      .Str("schedule", schedule.name())
      .Int("every_s", schedule.spec().every_seconds())
      .Str("caller", caller.empty() ? "anonymous" : std::string(caller));
  return schedule;
}

absl::StatusOr<v1::Schedule> ScheduleManager::Get(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = schedules_.find(NameOf(name));
  if (it == schedules_.end()) return NotFound(name);
  return it->second;
}

std::vector<v1::Schedule> ScheduleManager::List() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Schedule> out;
  for (const auto& [name, schedule] : schedules_) out.push_back(schedule);
  return out;
}

absl::StatusOr<v1::Schedule> ScheduleManager::Pause(absl::string_view name, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = schedules_.find(NameOf(name));
  if (it == schedules_.end()) return NotFound(name);
  it->second.set_paused(true);
  SaveLocked(it->second);
  LogInfo("schedule.paused").Str("schedule", it->first);
  return it->second;
}

absl::StatusOr<v1::Schedule> ScheduleManager::Resume(absl::string_view name, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = schedules_.find(NameOf(name));
  if (it == schedules_.end()) return NotFound(name);
  if (it->second.paused()) {
    it->second.set_paused(false);
    *it->second.mutable_next_fire_time() =
        TimestampFromTime(now + absl::Seconds(it->second.spec().every_seconds()));
    SaveLocked(it->second);
    LogInfo("schedule.resumed").Str("schedule", it->first);
  }
  return it->second;
}

absl::Status ScheduleManager::Delete(absl::string_view name, absl::Time now) {
  std::string running;
  {
    absl::MutexLock lock(&mu_);
    auto it = schedules_.find(NameOf(name));
    if (it == schedules_.end()) return NotFound(name);
    if (absl::Status deleted = store_->DeleteSchedule(it->first); !deleted.ok()) return deleted;
    if (Running(it->second)) running = it->second.history(0).workflow();
    last_checks_.erase(it->first);
    schedules_.erase(it);
    LogInfo("schedule.deleted").Str("schedule", NameOf(name));
  }
  if (!running.empty()) (void)workflows_->Cancel(running, now);
  return absl::OkStatus();
}

void ScheduleManager::SaveLocked(v1::Schedule& schedule) {
  schedule.set_version(schedule.version() + 1);
  if (absl::Status s = store_->PutSchedule(schedule); !s.ok()) {
    LogError("store.error").Str("schedule", schedule.name()).Str("error", std::string(s.message()));
  }
}

void ScheduleManager::Tick(absl::Time now) {
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    for (const auto& [name, schedule] : schedules_) names.push_back(name);
  }
  for (const std::string& name : names) Step(name, now);
}

void ScheduleManager::Apply(const std::string& name,
                            const std::function<void(v1::Schedule&)>& change) {
  absl::MutexLock lock(&mu_);
  auto it = schedules_.find(name);
  if (it == schedules_.end()) return;
  change(it->second);
  SaveLocked(it->second);
}

void ScheduleManager::Step(const std::string& name, absl::Time now) {
  v1::Schedule schedule;
  {
    absl::MutexLock lock(&mu_);
    auto it = schedules_.find(name);
    if (it == schedules_.end()) return;
    schedule = it->second;
  }
  // What to change is decided without the lock (the workflow manager is
  // called) and applied under it to the schedule as it is then.
  if (Running(schedule)) {
    if (schedule.history(0).outcome() == "waiting") {
      StartFiring(schedule, now);
    } else {
      FollowFiring(schedule, now);
    }
    return;
  }
  if (schedule.paused()) return;
  const absl::Time due = TimeFromTimestamp(schedule.next_fire_time());
  if (now < due) return;
  // Due (perhaps long ago, while the coordinator was down): one firing;
  // the next a period after the one due, or, when periods were missed, a
  // period from now (the missed ones are not made up).
  const absl::Duration every = absl::Seconds(schedule.spec().every_seconds());
  absl::Time next = due + every;
  if (next <= now) next = now + every;
  Apply(name, [&](v1::Schedule& s) {
    v1::ScheduleFiring firing;
    // Made now; its window counts from now, also for one missed while
    // the coordinator was down.
    *firing.mutable_time() = TimestampFromTime(now);
    firing.set_outcome("waiting");
    s.mutable_history()->Add(std::move(firing));
    // Newest first, at most kHistory.
    std::rotate(s.mutable_history()->rbegin(), s.mutable_history()->rbegin() + 1,
                s.mutable_history()->rend());
    while (s.history_size() > kHistory) s.mutable_history()->RemoveLast();
    *s.mutable_last_fire_time() = TimestampFromTime(now);
    *s.mutable_next_fire_time() = TimestampFromTime(next);
    s.set_firings(s.firings() + 1);
  });
  Step(name, now);  // start at once when the workers are idle
}

void ScheduleManager::StartFiring(const v1::Schedule& schedule, absl::Time now) {
  const std::string& name = schedule.name();
  const absl::Time made = TimeFromTimestamp(schedule.history(0).time());
  const absl::Status idle = runs_->WorkersIdle(schedule.spec().workers());
  if (!idle.ok()) {
    if (now - made < Window(schedule)) return;
    const std::string reason = absl::StrCat("workers busy for the whole window (",
                                            FormatDuration(absl::ToDoubleSeconds(Window(schedule))),
                                            "): ", idle.message());
    Apply(name, [&](v1::Schedule& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      s.mutable_history(0)->set_outcome("skipped");
      s.mutable_history(0)->set_reason(reason);
      s.set_last_outcome("skipped");
      ++outcomes_[s.name()]["skipped"];
    });
    LogInfo("schedule.skipped").Str("schedule", name).Str("reason", reason);
    return;
  }
  v1::CreateWorkflowRequest request;
  *request.mutable_spec() = FiringSpec(schedule);
  // One workflow per firing, also across a restart.
  request.set_request_id(absl::StrCat(name, "/", absl::ToUnixSeconds(made)));
  absl::StatusOr<v1::Workflow> created = workflows_->Create(request, now, name);
  if (absl::IsResourceExhausted(created.status())) return;  // the workflow queue: next tick
  // Refused as the fleet is now (workers not back yet after a restart,
  // one drained): tried again until the window ends, then failed with
  // the reason.
  if (!created.ok() && now - made < Window(schedule)) return;
  Apply(name, [&](v1::Schedule& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (created.ok()) {
      s.mutable_history(0)->set_outcome("running");
      s.mutable_history(0)->set_workflow(created->name());
    } else {
      s.mutable_history(0)->set_outcome("failed");
      s.mutable_history(0)->set_reason(std::string(created.status().message()));
      s.set_last_outcome("failed");
      ++outcomes_[s.name()]["failed"];
    }
  });
  LogInfo("schedule.fired")
      .Str("schedule", name)
      .Str("workflow", created.ok() ? created->name() : "")
      .Str("error", created.ok() ? "" : std::string(created.status().message()));
}

void ScheduleManager::FollowFiring(const v1::Schedule& schedule, absl::Time now) {
  const std::string& name = schedule.name();
  const v1::ScheduleFiring& firing = schedule.history(0);
  absl::StatusOr<v1::Workflow> workflow = workflows_->Get(firing.workflow());
  if (workflow.ok() && !IsFinalWorkflowState(workflow->state())) return;
  const std::string outcome = workflow.ok() ? OutcomeOf(*workflow) : "failed";
  const int regressions =
      workflow.ok() ? workflow->output().check().regressions() + CountHuntFindings(*workflow) : 0;
  const std::string reason =
      workflow.ok() ? workflow->error() : std::string(workflow.status().message());
  Apply(name, [&](v1::Schedule& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::ScheduleFiring* f = s.mutable_history(0);
    f->set_outcome(outcome);
    f->set_reason(reason);
    f->set_regressions(regressions);
    s.set_last_outcome(outcome);
    ++outcomes_[s.name()][outcome];
    s.set_regressions_found(s.regressions_found() + regressions);
    if (outcome == "succeeded") *s.mutable_last_success_time() = TimestampFromTime(now);
    if (workflow.ok() && workflow->output().has_check()) {
      last_checks_[s.name()] = workflow->output().check();
    }
  });
  LogInfo("schedule.firing_ended")
      .Str("schedule", name)
      .Str("workflow", firing.workflow())
      .Str("outcome", outcome)
      .Int("regressions", regressions);
}

std::string ScheduleManager::MetricsText() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Schedule> schedules;
  for (const auto& [name, schedule] : schedules_) schedules.push_back(schedule);
  return ScheduleMetricsText(schedules, last_checks_, outcomes_);
}

}  // namespace collbench

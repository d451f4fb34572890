// SPDX-License-Identifier: Apache-2.0
// RunManager: what workers tell about runs (a worker joined or was lost, run
// status, logs, rank progress), the periodic tick, and recovery after a
// restart. The result path is in run_manager_results.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/convert.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/live_run.h"
#include "server/core/no_io_lock.h"
#include "server/core/run_manager.h"

namespace collbench {
namespace {

// Results 0..n-1 of a stored list that form an unbroken run from 0.
int64_t ContiguousThrough(const std::vector<v1::SizeResult>& results) {
  int64_t through = -1;
  for (const v1::SizeResult& r : results) {
    if (r.sequence() != through + 1) break;
    ++through;
  }
  return through;
}

absl::Duration TimeoutOf(const v1::RunSpec& spec, absl::Duration default_timeout) {
  return spec.has_timeout() && spec.timeout().seconds() > 0 ? absl::Seconds(spec.timeout().seconds())
                                                            : default_timeout;
}

}  // namespace

absl::Status RunManager::Recover(absl::Time now) {
  // Everything read before the lock is taken.
  ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListUnfinishedRuns());
  std::map<std::string, std::vector<v1::SizeResult>> results;
  for (const v1::Run& run : runs) {
    if (run.state() == v1::QUEUED) continue;
    ASSIGN_OR_RETURN(results[run.name()], store_->ListResults(run.name()));
  }
  NoIoLock lock(&mu_, kRunLockName);
  for (v1::Run& run : runs) {
    auto live = std::make_unique<LiveRun>();
    if (run.state() == v1::QUEUED) {
      live->phase = Phase::kQueued;
      queue_.push_back(run.name());
    } else {
      const std::vector<v1::SizeResult>& stored = results[run.name()];
      live->phase = run.state() == v1::RUNNING ? Phase::kRunning : Phase::kScheduled;
      live->stored_through = ContiguousThrough(stored);
      for (const v1::SizeResult& r : stored) {
        if (r.sequence() > live->stored_through) live->stored_ahead.insert(r.sequence());
      }
      run.set_sizes_done(static_cast<int32_t>(stored.size()));
      // Its launcher has readopt_grace to reconnect and claim it.
      live->launcher_away_since = now;
      live->deadline = TimeFromTimestamp(run.start_time()) +
                       TimeoutOf(run.spec(), options_.default_run_timeout);
    }
    live->run = std::move(run);
    const std::string name = live->run.name();
    live_[name] = std::move(live);
  }
  LogInfo("coordinator.recovered", absl::StrCat("recovered ", live_.size(), " unfinished runs"))
      .Int("runs", static_cast<int64_t>(live_.size()));
  return absl::OkStatus();
}

void RunManager::OnWorkerJoined(const std::string& worker,
                                const std::vector<std::string>& active_runs, absl::Time now) {
  NoIoLock lock(&mu_, kRunLockName);
  // After a coordinator restart, runs still hold this worker.
  for (auto& [name, live] : live_) {
    if (live->phase == Phase::kCreating || live->phase == Phase::kQueued) continue;
    for (const std::string& held : live->run.held_workers()) {
      if (held == worker) {
        (void)registry_->Hold(name, {held}, live->run.spec().placement().share_host());
      }
    }
  }
  for (const std::string& run : active_runs) AdoptLocked(worker, run);
  ScheduleLocked(now);
}

void RunManager::AdoptLocked(const std::string& worker, const std::string& run) {
  LiveRun* live = FindLiveLocked(run);
  if (live == nullptr || live->run.launcher() != worker) {
    // The coordinator gave up on it meanwhile: make sure it stops.
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_run(run);
    cancel.mutable_cancel()->set_reason("the coordinator no longer has this run active");
    link_->Send(worker, cancel);
    return;
  }
  live->launcher_away_since.reset();
  if (live->stored_through >= 0) {
    v1::CoordinatorMessage ack;
    ack.mutable_ack()->set_run(live->run.name());
    ack.mutable_ack()->set_sequence(live->stored_through);
    link_->Send(worker, ack);
  }
}

void RunManager::OnWorkerLost(const std::string& worker, uint64_t session, absl::Time now) {
  NoIoLock lock(&mu_, kRunLockName);
  // Read under the lock, so a run started meanwhile is seen and failed.
  absl::StatusOr<scheduling::WorkerSnapshot> snapshot = registry_->Get(worker);
  // A reconnect in between superseded this session: nothing was lost.
  if (!snapshot.ok() || snapshot->session != session ||
      snapshot->state != scheduling::WorkerState::kLost) {
    return;
  }
  if (WorkerLostLocked(*snapshot, now)) ScheduleLocked(now);
}

void RunManager::OnLauncherLost(const std::string& launcher, absl::Time now) {
  NoIoLock lock(&mu_, kRunLockName);
  for (auto& [name, live] : live_) {
    if (live->phase == Phase::kCreating || live->phase == Phase::kQueued) continue;
    if (live->run.launcher() == launcher && !live->launcher_away_since.has_value()) {
      live->launcher_away_since = now;
    }
  }
}

bool RunManager::WorkerLostLocked(const scheduling::WorkerSnapshot& worker, absl::Time now) {
  LiveRun* live = worker.current_run.empty() ? nullptr : FindLiveLocked(worker.current_run);
  if (live == nullptr || live->phase == Phase::kCancelling) return false;
  bool ranks_on_it = false;
  for (const v1::RankHost& host : live->run.hosts()) ranks_on_it |= host.worker() == worker.name;
  if (!ranks_on_it) return false;  // held only to keep its host quiet
  if (live->run.launcher() == worker.name) {
    // Maybe only the stream broke; the launcher may come back and claim it.
    if (!live->launcher_away_since.has_value()) live->launcher_away_since = now;
    return false;
  }
  // The registry's reason names the worker ("worker workers/x disconnected").
  AbortLocked(*live, v1::FAILED,
              worker.lost_reason.empty() ? absl::StrCat("worker ", worker.name, " was lost")
                                         : worker.lost_reason,
              now);
  return true;
}

void RunManager::OnRunStatus(const std::string& worker, const v1::RunStatus& status,
                             absl::Time now) {
  NoIoLock lock(&mu_, kRunLockName);
  LiveRun* live = FindLiveLocked(status.run());
  if (live == nullptr || live->phase == Phase::kCreating) return;
  if (live->run.launcher() != worker) {
    RefuseMessageLocked(worker, status.run(), "status_not_launcher");
    return;
  }
  live->launcher_away_since.reset();
  v1::Run& run = live->run;
  if (!IsFinalRunState(status.state())) {
    // SCHEDULED only says the launcher took the run; RUNNING comes with the
    // engine's start.
    if (live->phase != Phase::kScheduled && live->phase != Phase::kRunning) return;
    if (status.state() != v1::RUNNING) return;
    live->phase = Phase::kRunning;
    run.set_state(v1::RUNNING);
    run.set_sizes_total(status.sizes_total());
    run.set_mpi_version(status.mpi_version());
    run.set_nccl_version(status.nccl_version());
    run.set_environment_fingerprint(status.environment_fingerprint());
    run.mutable_rank_hosts()->Assign(status.rank_hosts().begin(), status.rank_hosts().end());
    SaveLocked(*live, now);
    return;
  }
  if (live->phase == Phase::kCancelling) {
    // The launcher confirms the kill: the workers are free now.
    const std::string name = run.name();
    ReleaseWorkersLocked(name);
    live_.erase(name);
    ScheduleLocked(now);
    return;
  }
  if (live->phase != Phase::kScheduled && live->phase != Phase::kRunning) return;
  live->phase = Phase::kEnding;
  live->final_state = status.state();
  live->final_error = status.error();
  if (status.state() == v1::FAILED) {
    // Where every rank was when it failed (a rank that exited without
    // finalising makes the launcher fail the job).
    if (const std::string ranks = progress_.Positions(run.name()); !ranks.empty()) {
      absl::StrAppend(&live->final_error, "; the ranks when it ended: ", ranks);
    }
  }
  live->results_total = status.results_total();
  FinishIfCompleteLocked(*live, now);
  ScheduleLocked(now);
}

void RunManager::OnLog(const std::string& worker, const v1::RunLog& log, absl::Time now) {
  {
    NoIoLock lock(&mu_, kRunLockName);
    LiveRun* live = FindLiveLocked(log.run());
    if (live == nullptr || live->run.launcher() != worker) {
      RefuseMessageLocked(worker, log.run(), "log_not_launcher");
      return;
    }
  }
  v1::RunEvent event;
  event.set_run(log.run());
  *event.mutable_time() = TimestampFromTime(now);
  *event.mutable_log() = log.line();
  hub_->Publish(event);
}

void RunManager::OnRankProgress(const std::string& worker, const v1::RankProgressReport& report,
                                absl::Time now) {
  v1::RunEvent event;
  {
    NoIoLock lock(&mu_, kRunLockName);
    LiveRun* live = FindLiveLocked(report.run());
    if (live == nullptr) return;  // ended meanwhile
    const bool ours = std::any_of(live->run.hosts().begin(), live->run.hosts().end(),
                                  [&](const v1::RankHost& h) { return h.worker() == worker; });
    if (!ours) {
      RefuseMessageLocked(worker, report.run(), "progress_not_a_worker_of_the_run");
      return;
    }
    if (live->phase != Phase::kRunning) return;
    std::optional<ProgressTracker::Ranks> ranks =
        progress_.Apply(live->run.name(), worker, report.ranks(), live->run.hosts(), now);
    if (!ranks.has_value()) return;
    event.set_run(live->run.name());
    *event.mutable_time() = TimestampFromTime(now);
    v1::Progress* progress = event.mutable_progress();
    progress->set_sizes_done(live->run.sizes_done());
    progress->set_sizes_total(live->run.sizes_total());
    *progress->mutable_ranks() = *std::move(ranks);
  }
  hub_->Publish(event);
}

void RunManager::Tick(absl::Time now) {
  NoIoLock lock(&mu_, kRunLockName);
  std::vector<std::string> names;
  for (const auto& [name, live] : live_) names.push_back(name);
  for (const std::string& name : names) {
    if (LiveRun* live = FindLiveLocked(name)) TickRunLocked(*live, now);
  }
  ScheduleLocked(now);
}

void RunManager::TickRunLocked(LiveRun& live, absl::Time now) {
  const std::string name = live.run.name();
  switch (live.phase) {
    case Phase::kCreating:
    case Phase::kQueued:
    case Phase::kWithdrawing:
      return;
    case Phase::kCancelling:
      if (now >= live.cancel_deadline) {
        ReleaseWorkersLocked(name);
        live_.erase(name);
      }
      return;
    default:
      break;
  }
  if (live.launcher_away_since.has_value() &&
      now >= *live.launcher_away_since + options_.readopt_grace) {
    AbortLocked(live, v1::FAILED,
                absl::StrCat("launcher ", live.run.launcher(), " did not come back within ",
                             absl::FormatDuration(options_.readopt_grace)),
                now);
  } else if (now >= live.deadline) {
    AbortLocked(live, v1::FAILED, "timed out", now);
  } else if (live.phase == Phase::kRunning) {
    std::optional<ProgressTracker::Hang> hang = progress_.CheckHang(name, live.run.spec(), now);
    if (!hang.has_value()) return;
    LogWarn("run.hang", absl::StrCat(name, " ", hang->diagnosis)).Str("run", name);
    *live.run.mutable_rank_progress() = std::move(hang->ranks);
    AbortLocked(live, v1::FAILED, hang->diagnosis, now);
  }
}

void RunManager::RefuseMessageLocked(const std::string& worker, const std::string& run,
                                     const char* reason) {
  const int64_t count = ++refused_messages_[reason];
  // Logged at powers of two: a worker that keeps at it cannot flood the log.
  if ((count & (count - 1)) == 0) {
    LogWarn("worker.message_refused",
            absl::StrFormat("refused a message from %s about %s (%s; %d so far)", worker, run,
                            reason, count))
        .Str("worker", worker)
        .Str("run", run)
        .Str("reason", reason)
        .Int("count", count);
  }
}

}  // namespace collbench

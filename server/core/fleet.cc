// SPDX-License-Identifier: Apache-2.0
#include "server/core/fleet.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/no_io_lock.h"

namespace collbench {

void Fleet::OnRegisterAsync(const v1::Register& hello, absl::Time now, absl::string_view peer,
                            WorkerDirectory::RegisterDone done) {
  if (hello.launcher()) {
    absl::StatusOr<WorkerDirectory::Registration> registered =
        launchers_ != nullptr ? launchers_->Register(hello, now)
                              : absl::PermissionDeniedError("this coordinator takes no launchers");
    if (registered.ok()) {
      runs_->OnWorkerJoined(registered->name,
                            {hello.active_runs().begin(), hello.active_runs().end()}, now);
    }
    std::move(done)(std::move(registered));
    return;
  }
  workers_->RegisterAsync(
      hello, now, peer,
      [this, now,
       active = std::vector<std::string>(hello.active_runs().begin(), hello.active_runs().end()),
       done = std::move(done)](absl::StatusOr<WorkerDirectory::Registration> result) mutable {
        if (result.ok()) runs_->OnWorkerJoined(result->name, active, now);
        std::move(done)(std::move(result));
      });
}

absl::StatusOr<WorkerDirectory::Registration> Fleet::OnRegister(const v1::Register& hello,
                                                                absl::Time now,
                                                                absl::string_view peer) {
  CheckMayBlock("Fleet", "OnRegister");
  absl::Notification finished;
  absl::StatusOr<WorkerDirectory::Registration> outcome;
  OnRegisterAsync(hello, now, peer, [&](absl::StatusOr<WorkerDirectory::Registration> result) {
    outcome = std::move(result);
    finished.Notify();
  });
  finished.WaitForNotification();
  return outcome;
}

void Fleet::OnHeartbeat(const std::string& worker, uint64_t session, absl::Time now) {
  if (LauncherPool::IsLauncherName(worker)) {
    if (launchers_ != nullptr) launchers_->Heartbeat(worker, session, now);
    return;
  }
  workers_->Heartbeat(worker, session, now);
}

void Fleet::OnDisconnect(const std::string& worker, uint64_t session, absl::Time now) {
  if (LauncherPool::IsLauncherName(worker)) {
    if (launchers_ != nullptr && launchers_->Disconnect(worker, session)) {
      runs_->OnLauncherLost(worker, now);
    }
    return;
  }
  if (workers_->Disconnect(worker, session)) runs_->OnWorkerLost(worker, session, now);
}

absl::StatusOr<v1::Worker> Fleet::UndrainWorker(absl::string_view name, absl::Time now) {
  ASSIGN_OR_RETURN(v1::Worker worker, workers_->Undrain(name));
  runs_->Schedule(now);
  return worker;
}

absl::StatusOr<v1::Worker> Fleet::ClearWorker(absl::string_view name, absl::string_view by,
                                              absl::Time now) {
  ASSIGN_OR_RETURN(v1::Worker worker, workers_->Clear(name, by));
  runs_->Schedule(now);
  return worker;
}

absl::Status Fleet::ForgetWorker(absl::string_view name) {
  const std::string full =
      absl::StartsWith(name, "workers/") ? std::string(name) : absl::StrCat("workers/", name);
  return workers_->Forget(full, runs_->HolderOf(full));
}

std::vector<std::string> Fleet::ForgetGoneWorkers(absl::Time now) {
  std::vector<std::string> forgotten;
  const absl::Duration window = workers_->forget_after();
  if (window <= absl::ZeroDuration()) return forgotten;
  for (const std::string& name : workers_->GoneSince(now - window)) {
    // Refused while a run holds it, or when it came back meanwhile.
    if (ForgetWorker(name).ok()) forgotten.push_back(name);
  }
  if (!forgotten.empty()) {
    LogInfo("worker.forgotten_gone",
            absl::StrCat("forgot ", forgotten.size(), " worker names gone for more than ",
                         absl::FormatDuration(window), " (--forget-workers-after)"))
        .Int("forgotten", static_cast<int64_t>(forgotten.size()));
  }
  return forgotten;
}

WorkerCounts Fleet::worker_counts() {
  WorkerCounts counts;
  counts.registrations = workers_->registrations();
  if (launchers_ != nullptr) counts.registrations.merge(launchers_->registrations());
  counts.refused_messages = runs_->refused_messages();
  return counts;
}

void Fleet::Tick(absl::Time now) {
  for (const scheduling::WorkerSnapshot& lost :
       workers_->ExpireStale(now, options_.heartbeat_timeout)) {
    runs_->OnWorkerLost(lost.name, lost.session, now);
  }
  if (launchers_ != nullptr) {
    for (const std::string& lost : launchers_->ExpireStale(now, options_.heartbeat_timeout)) {
      runs_->OnLauncherLost(lost, now);
    }
  }
  runs_->Tick(now);
  workers_->FlushRows();
}

}  // namespace collbench

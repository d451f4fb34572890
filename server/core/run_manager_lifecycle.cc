// SPDX-License-Identifier: Apache-2.0
// RunManager: what operators do to workers and runs once they exist:
// drain and undrain a worker, delete a finished run, and retention.
// Forgetting a worker (the API's DeleteWorker) is in
// run_manager_identity.cc, with the secrets it forgets.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/run_manager.h"

namespace collbench {
namespace {

std::string FullName(absl::string_view prefix, absl::string_view name) {
  return absl::StartsWith(name, prefix) ? std::string(name) : absl::StrCat(prefix, name);
}

// At most this many names in one log line of a retention pass.
constexpr size_t kNamesLogged = 20;
// Runs one retention pass deletes at most (one store transaction each):
// a long backlog, when a policy is first set, goes over several passes
// rather than holding up the ticker that calls it.
constexpr size_t kMaxDeletesPerPass = 1000;

}  // namespace

absl::StatusOr<v1::Worker> RunManager::DrainWorker(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  return SetDrainingLocked(name, true);
}

absl::StatusOr<v1::Worker> RunManager::UndrainWorker(absl::string_view name, absl::Time now) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(v1::Worker worker, SetDrainingLocked(name, false));
  ScheduleLocked(now);  // queued runs may fit on it now
  return worker;
}

absl::StatusOr<v1::Worker> RunManager::SetDrainingLocked(absl::string_view name, bool draining) {
  const std::string full = FullName("workers/", name);
  v1::Worker worker;
  if (registry_->Get(full).ok()) {
    RETURN_IF_ERROR(draining ? registry_->Drain(full) : registry_->Undrain(full));
    ASSIGN_OR_RETURN(const scheduling::WorkerSnapshot snapshot, registry_->Get(full));
    worker = WorkerProto(snapshot);
  } else if (auto before = known_before_start_.find(full); before != known_before_start_.end()) {
    // Not back since a restart: the row keeps the decision for when it is.
    before->second.set_draining(draining);
    worker = before->second;
  } else {
    return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
  }
  SaveWorkerLocked(worker);
  LogInfo(draining ? "worker.draining" : "worker.undrained",
          absl::StrCat(full, draining ? " drained: it takes no new run until undrained"
                                      : " undrained"))
      .Str("worker", full);
  return worker;
}

absl::StatusOr<v1::Worker> RunManager::SuspectWorker(absl::string_view name,
                                                     const v1::WorkerSuspicion& why) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(v1::Worker worker, SetSuspectLocked(name, &why));
  LogWarn("worker.suspect", absl::StrCat(worker.name(), " is SUSPECT: ", why.reason()))
      .Str("worker", worker.name())
      .Str("hunt", why.hunt());
  return worker;
}

absl::StatusOr<v1::Worker> RunManager::ClearWorker(absl::string_view name, absl::string_view by,
                                                   absl::Time now) {
  absl::MutexLock lock(&mu_);
  const std::string full = FullName("workers/", name);
  bool suspect = false;
  {
    absl::MutexLock suspicions(&suspicions_mu_);
    suspect = suspicions_.count(full) > 0;
  }
  if (!suspect) {
    if (auto before = known_before_start_.find(full); before != known_before_start_.end()) {
      suspect = before->second.has_suspect();
    }
  }
  if (!suspect) {
    if (!registry_->Get(full).ok() && !known_before_start_.count(full)) {
      return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
    }
    return absl::FailedPreconditionError(absl::StrCat(full, " is not SUSPECT"));
  }
  ASSIGN_OR_RETURN(v1::Worker worker, SetSuspectLocked(full, nullptr));
  LogInfo("worker.cleared", absl::StrCat(full, " cleared (", by, "): it takes runs again"))
      .Str("worker", full);
  ScheduleLocked(now);  // runs waiting for it may start
  return worker;
}

absl::StatusOr<v1::Worker> RunManager::SetSuspectLocked(absl::string_view name,
                                                        const v1::WorkerSuspicion* why) {
  const std::string full = FullName("workers/", name);
  v1::Worker worker;
  if (registry_->Get(full).ok()) {
    {
      absl::MutexLock suspicions(&suspicions_mu_);
      if (why != nullptr) {
        suspicions_[full] = *why;
      } else {
        suspicions_.erase(full);
      }
    }
    RETURN_IF_ERROR(registry_->SetSuspect(full, why != nullptr));
    ASSIGN_OR_RETURN(const scheduling::WorkerSnapshot snapshot, registry_->Get(full));
    worker = WorkerProto(snapshot);
  } else if (auto before = known_before_start_.find(full); before != known_before_start_.end()) {
    // Not back since a restart: the row keeps it for when it is.
    if (why != nullptr) {
      *before->second.mutable_suspect() = *why;
    } else {
      before->second.clear_suspect();
    }
    worker = before->second;
  } else {
    return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
  }
  SaveWorkerLocked(worker);
  return worker;
}

absl::Status RunManager::NotDeletable(const LiveRun& live) {
  const std::string& name = live.run.name();
  if (live.cancelling) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " is ", v1::RunState_Name(live.run.state()),
        " but its launcher has not yet confirmed that every process ended; delete it once it "
        "has (or once the cancel grace is over)"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      name, " is ", v1::RunState_Name(live.run.state()), "; cancel it first, then delete it"));
}

absl::Status RunManager::DeleteRun(absl::string_view name) {
  const std::string full = FullName("runs/", name);
  {
    absl::MutexLock lock(&mu_);
    if (const LiveRun* live = FindLiveLocked(full)) return NotDeletable(*live);
  }
  // Not live, so it never will be again (runs become live only when created
  // or recovered) and OnResult submits nothing more of it. What it submitted
  // while live is written now, while its row still exists, so none of it
  // lands after the delete.
  ASSIGN_OR_RETURN(const v1::Run run, store_->GetRun(full));
  writer_->Flush();
  RETURN_IF_ERROR(store_->DeleteRun(full));
  LogInfo("run.deleted", absl::StrCat("deleted ", full, " (", v1::RunState_Name(run.state()),
                                      ") and its results"))
      .Str("run", full);
  return absl::OkStatus();
}

std::vector<std::string> RunManager::ApplyRetention(absl::Time now) {
  const RetentionPolicy& policy = options_.retention;
  if (!policy.active()) return {};
  absl::StatusOr<std::vector<Store::FinishedRun>> finished = store_->ListFinishedRuns();
  if (!finished.ok()) {
    LogError("store.error", absl::StrCat("retention (", DescribeRetention(policy),
                                         "): listing runs"))
        .Error(finished.status());
    return {};
  }
  std::vector<std::string> past;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> candidates = RunsPastRetention(*finished, policy, now);
    // Oldest first, so a capped pass removes the oldest.
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      if (past.size() == kMaxDeletesPerPass) break;
      // A cancelled run whose kill is unconfirmed goes in a later pass.
      if (FindLiveLocked(*it) == nullptr) past.push_back(std::move(*it));
    }
  }
  if (past.empty()) return {};
  writer_->Flush();  // as DeleteRun: nothing of them lands after the delete
  std::vector<std::string> deleted;
  for (std::string& name : past) {
    absl::Status status = store_->DeleteRun(name);
    if (status.ok()) {
      deleted.push_back(std::move(name));
    } else if (!absl::IsNotFound(status)) {  // NotFound: deleted meanwhile by a caller
      LogError("store.error", absl::StrCat("retention (", DescribeRetention(policy),
                                           "): deleting ", name))
          .Str("run", name)
          .Error(status);
      break;
    }
  }
  if (!deleted.empty()) {
    const size_t shown = std::min(deleted.size(), kNamesLogged);
    LogInfo("retention.deleted",
            absl::StrCat("retention (", DescribeRetention(policy), ") deleted ", deleted.size(),
                         " finished runs: ",
                         absl::StrJoin(deleted.begin(), deleted.begin() + shown, ", "),
                         shown < deleted.size()
                             ? absl::StrCat(" and ", deleted.size() - shown, " more")
                             : ""))
        .Int("deleted", static_cast<int64_t>(deleted.size()));
  }
  return deleted;
}

}  // namespace collbench

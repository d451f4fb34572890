// SPDX-License-Identifier: Apache-2.0
// RunManager: worker identity (docs/design/security.md#worker-identity): the
// secret check of a known name, the caps and a new secret for a new one,
// forgetting a name, and the counts of registrations and refused worker
// messages.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/host_port.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/run_manager.h"
#include "server/core/worker_credentials.h"

namespace collbench {

absl::Status RunManager::AdmitWorkerLocked(const std::string& name, const v1::Register& hello,
                                           absl::string_view peer, absl::Time now,
                                           v1::Registered* reply) {
  auto refuse = [&](const char* result, absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++worker_counts_.registrations[result];
    LogWarn("worker.register_refused",
            absl::StrCat("registration of ", name, " from ",
                         peer.empty() ? "an unknown peer" : peer, " refused: ", status.message()))
        .Str("worker", name)
        .Str("peer", peer)
        .Str("reason", result)
        .Error(status);
    return status;
  };
  if (auto known = secret_hashes_.find(name); known != secret_hashes_.end()) {
    if (!WorkerSecretMatches(hello.worker_secret(), known->second)) {
      return refuse("refused_secret",
                    absl::PermissionDeniedError(absl::StrCat(
                        "register.worker_secret: ", name,
                        " is a known worker; only its own secret (issued at its first "
                        "registration and kept in its state directory) admits it, the join "
                        "token alone does not. If the worker lost its secret, an operator "
                        "must forget the name first")));
    }
    ++worker_counts_.registrations["reconnected"];
    return absl::OkStatus();
  }
  if (options_.max_workers > 0 &&
      secret_hashes_.size() >= static_cast<size_t>(options_.max_workers)) {
    return refuse("refused_max_workers",
                  absl::ResourceExhaustedError(absl::StrCat(
                      "register: this coordinator already knows ", secret_hashes_.size(),
                      " workers, its limit (--max-workers); ", name, " is not admitted")));
  }
  if (const absl::Duration wait = register_limiter_.Acquire(PeerAddress(peer), now);
      wait > absl::ZeroDuration()) {
    return refuse("refused_rate", absl::ResourceExhaustedError(absl::StrCat(
                                      "register: too many new worker names from ", PeerAddress(peer),
                                      " (--register-rate); retry in ",
                                      absl::FormatDuration(wait))));
  }
  ASSIGN_OR_RETURN(std::string secret, NewWorkerSecret());
  std::string hash = HashWorkerSecret(secret);
  // Stored before the secret is handed out: a restarted coordinator must
  // know every secret a worker holds.
  if (absl::Status stored = store_->SetWorkerSecretHash(name, hash); !stored.ok()) {
    return refuse("refused_store", absl::UnavailableError(absl::StrCat(
                                       "register: cannot record ", name, "'s credential: ",
                                       stored.message())));
  }
  secret_hashes_[name] = std::move(hash);
  reply->set_worker_secret(std::move(secret));
  ++worker_counts_.registrations["new"];
  return absl::OkStatus();
}

absl::Status RunManager::ForgetWorker(absl::string_view name) {
  const std::string full = absl::StartsWith(name, "workers/") ? std::string(name)
                                                               : absl::StrCat("workers/", name);
  // Ordered with a flush of worker rows, which could otherwise write the
  // row back after the store forgot it.
  absl::MutexLock flushing(&flush_mu_);
  absl::MutexLock lock(&mu_);
  if (absl::StatusOr<scheduling::WorkerSnapshot> live = registry_->Get(full); live.ok()) {
    if (live->state != scheduling::WorkerState::kLost) {
      return absl::FailedPreconditionError(absl::StrCat(
          full, " is connected (", scheduling::WorkerStateName(live->state),
          "); only a worker that is gone can be deleted: drain it, stop it, then delete it"));
    }
    if (!live->current_run.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(full, " is held by ", live->current_run, "; wait for the run to end"));
    }
  }
  // After a restart, a run waiting for its workers to come back holds it
  // before the registry knows it.
  for (const auto& [run, live] : live_) {
    for (const std::string& held : live.run.held_workers()) {
      if (held == full) {
        return absl::FailedPreconditionError(
            absl::StrCat(full, " is held by ", run, "; wait for the run to end"));
      }
    }
  }
  const bool known = secret_hashes_.count(full) > 0 || known_before_start_.count(full) > 0 ||
                     registry_->Get(full).ok();
  if (!known) return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
  absl::Status deleted = store_->DeleteWorker(full);
  if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
  (void)registry_->Remove(full);
  {
    absl::MutexLock inventories(&inventories_mu_);
    inventories_.erase(full);
  }
  secret_hashes_.erase(full);
  {
    absl::MutexLock suspicions(&suspicions_mu_);
    suspicions_.erase(full);
  }
  known_before_start_.erase(full);
  unsaved_workers_.erase(full);
  LogInfo("worker.forgotten", absl::StrCat("forgot ", full, "; it may register anew"))
      .Str("worker", full);
  return absl::OkStatus();
}

void RunManager::CountRegistration(absl::string_view result) {
  absl::MutexLock lock(&mu_);
  ++worker_counts_.registrations[std::string(result)];
}

WorkerCounts RunManager::worker_counts() {
  absl::MutexLock lock(&mu_);
  return worker_counts_;
}

void RunManager::RefuseMessageLocked(const std::string& worker, const std::string& run,
                                     const char* reason) {
  const int64_t count = ++worker_counts_.refused_messages[reason];
  // Logged at powers of two: a worker that keeps at it cannot flood the log.
  if ((count & (count - 1)) == 0) {
    LogWarn("worker.message_refused", absl::StrFormat("refused a message from %s about %s (%s; "
                                                      "%d so far)",
                                                      worker, run, reason, count))
        .Str("worker", worker)
        .Str("run", run)
        .Str("reason", reason)
        .Int("count", count);
  }
}

}  // namespace collbench

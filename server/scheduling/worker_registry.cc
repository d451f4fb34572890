// SPDX-License-Identifier: Apache-2.0
#include "server/scheduling/worker_registry.h"

#include <iterator>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace collbench::scheduling {
namespace {

WorkerState StateOf(bool lost, bool draining, bool suspect, const std::string& run) {
  if (lost) return WorkerState::kLost;
  if (draining) return WorkerState::kDraining;
  if (!run.empty()) return WorkerState::kBusy;
  if (suspect) return WorkerState::kSuspect;
  return WorkerState::kReady;
}

absl::Status UnknownWorker(absl::string_view name) {
  return absl::NotFoundError(
      absl::StrCat("worker ", name, " is not registered"));
}

}  // namespace

absl::string_view WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kReady:
      return "READY";
    case WorkerState::kBusy:
      return "BUSY";
    case WorkerState::kDraining:
      return "DRAINING";
    case WorkerState::kLost:
      return "LOST";
    case WorkerState::kSuspect:
      return "SUSPECT";
  }
  return "WORKER_STATE_UNSPECIFIED";
}

absl::Status WorkerRegistry::Validate(const WorkerRegistration& registration) {
  if (registration.name.empty()) {
    return absl::InvalidArgumentError("name: a worker needs a name");
  }
  if (registration.host_id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host_id: worker ", registration.name, " reported no host id"));
  }
  if (registration.slots < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("slots: worker ", registration.name, " reported ",
                     registration.slots, " slots; it needs at least 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> WorkerRegistry::Register(
    const WorkerRegistration& registration, absl::Time now) {
  if (absl::Status valid = Validate(registration); !valid.ok()) return valid;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = workers_.try_emplace(registration.name);
  Entry& entry = it->second;
  entry.registration = registration;
  entry.lost = false;
  entry.lost_reason.clear();
  if (inserted) entry.register_time = now;
  entry.last_heartbeat_time = now;
  entry.session = next_session_++;
  return entry.session;
}

absl::Status WorkerRegistry::Heartbeat(absl::string_view name, uint64_t session,
                                       absl::Time now) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr) return UnknownWorker(name);
  if (entry->session != session) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", entry->registration.name,
                     " reconnected; session ", session, " is superseded"));
  }
  entry->last_heartbeat_time = now;
  entry->lost = false;
  entry->lost_reason.clear();
  return absl::OkStatus();
}

bool WorkerRegistry::Disconnect(absl::string_view name, uint64_t session) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr || entry->session != session) return false;
  return MarkLostLocked(
      *entry,
      absl::StrCat("worker ", entry->registration.name, " disconnected"));
}

std::vector<WorkerSnapshot> WorkerRegistry::ExpireStale(
    absl::Time now, absl::Duration timeout) {
  std::vector<WorkerSnapshot> newly_lost;
  absl::MutexLock lock(&mu_);
  for (auto& [name, entry] : workers_) {
    const absl::Duration silent = now - entry.last_heartbeat_time;
    if (entry.lost || silent <= timeout) continue;
    MarkLostLocked(entry, absl::StrCat("worker ", name,
                                       " stopped heartbeating (last heartbeat ",
                                       absl::FormatDuration(silent), " ago)"));
    newly_lost.push_back(ToSnapshot(entry));
  }
  return newly_lost;
}

bool WorkerRegistry::MarkLost(absl::string_view name,
                              absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr) return false;
  return MarkLostLocked(*entry, std::string(reason));
}

absl::Status WorkerRegistry::Drain(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr) return UnknownWorker(name);
  entry->draining = true;
  return absl::OkStatus();
}

absl::Status WorkerRegistry::Undrain(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr) return UnknownWorker(name);
  entry->draining = false;
  return absl::OkStatus();
}

absl::Status WorkerRegistry::SetSuspect(absl::string_view name, bool suspect) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr) return UnknownWorker(name);
  entry->suspect = suspect;
  return absl::OkStatus();
}

absl::Status WorkerRegistry::Remove(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(name);
  if (entry == nullptr) return UnknownWorker(name);
  if (!entry->current_run.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", entry->registration.name, " is held by ",
                     entry->current_run));
  }
  workers_.erase(entry->registration.name);
  return absl::OkStatus();
}

absl::Status WorkerRegistry::Hold(absl::string_view run,
                                  const std::vector<std::string>& workers,
                                  bool share_host) {
  absl::MutexLock lock(&mu_);
  std::vector<Entry*> entries;
  for (const std::string& name : workers) {
    Entry* entry = FindLocked(name);
    if (entry == nullptr) return UnknownWorker(name);
    if (!entry->current_run.empty() && entry->current_run != run) {
      return absl::FailedPreconditionError(
          absl::StrCat("worker ", entry->registration.name, " is held by ",
                       entry->current_run));
    }
    entries.push_back(entry);
  }
  ActiveRun& active = runs_[std::string(run)];
  active.name = std::string(run);
  active.share_host = share_host;
  for (Entry* entry : entries) {
    if (!entry->current_run.empty()) continue;  // already held by `run`
    entry->current_run = std::string(run);
    active.held_workers.push_back(entry->registration.name);
  }
  return absl::OkStatus();
}

std::vector<std::string> WorkerRegistry::Release(absl::string_view run) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return {};
  std::vector<std::string> released = std::move(it->second.held_workers);
  runs_.erase(it);
  for (const std::string& name : released) {
    auto worker = workers_.find(name);
    if (worker != workers_.end() && worker->second.current_run == run) {
      worker->second.current_run.clear();
    }
  }
  return released;
}

absl::StatusOr<WorkerSnapshot> WorkerRegistry::Get(
    absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  const Entry* entry = FindLocked(name);
  if (entry == nullptr) return UnknownWorker(name);
  return ToSnapshot(*entry);
}

std::vector<WorkerSnapshot> WorkerRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<WorkerSnapshot> snapshots;
  snapshots.reserve(workers_.size());
  for (const auto& [name, entry] : workers_) {
    snapshots.push_back(ToSnapshot(entry));
  }
  return snapshots;
}

WorkerRegistry::Page WorkerRegistry::ListPage(size_t start, size_t count) const {
  absl::MutexLock lock(&mu_);
  Page page;
  page.total = workers_.size();
  if (start >= workers_.size()) return page;
  auto it = workers_.begin();
  std::advance(it, start);
  for (; it != workers_.end() && page.workers.size() < count; ++it) {
    page.workers.push_back(ToSnapshot(it->second));
  }
  return page;
}

std::vector<WorkerInfo> WorkerRegistry::SchedulerWorkers() const {
  absl::MutexLock lock(&mu_);
  std::vector<WorkerInfo> infos;
  infos.reserve(workers_.size());
  for (const auto& [name, entry] : workers_) {
    infos.push_back({name, entry.registration.host_id, entry.registration.slots,
                     !entry.lost && !entry.draining,
                     entry.lost       ? "lost"
                     : entry.draining ? "draining"
                                      : "",
                     entry.registration.offers, entry.suspect, entry.registration.admit_time});
  }
  return infos;
}

std::vector<ActiveRun> WorkerRegistry::ActiveRuns() const {
  absl::MutexLock lock(&mu_);
  std::vector<ActiveRun> runs;
  runs.reserve(runs_.size());
  for (const auto& [name, run] : runs_) runs.push_back(run);
  return runs;
}

const WorkerRegistry::Entry* WorkerRegistry::FindIn(
    const absl::btree_map<std::string, Entry>& workers,
    absl::string_view name) {
  auto it = workers.find(name);
  if (it == workers.end() && !absl::StartsWith(name, "workers/")) {
    it = workers.find(absl::StrCat("workers/", name));
  }
  return it == workers.end() ? nullptr : &it->second;
}

WorkerRegistry::Entry* WorkerRegistry::FindLocked(absl::string_view name) {
  return const_cast<Entry*>(FindIn(workers_, name));
}

const WorkerRegistry::Entry* WorkerRegistry::FindLocked(
    absl::string_view name) const {
  return FindIn(workers_, name);
}

bool WorkerRegistry::MarkLostLocked(Entry& entry, std::string reason) {
  if (entry.lost) return false;
  entry.lost = true;
  entry.lost_reason = std::move(reason);
  return true;
}

WorkerSnapshot WorkerRegistry::ToSnapshot(const Entry& entry) {
  WorkerSnapshot snapshot;
  snapshot.name = entry.registration.name;
  snapshot.host_id = entry.registration.host_id;
  snapshot.slots = entry.registration.slots;
  snapshot.admit_time = entry.registration.admit_time;
  snapshot.agent_address = entry.registration.agent_address;
  snapshot.offers = entry.registration.offers;
  snapshot.state = StateOf(entry.lost, entry.draining, entry.suspect, entry.current_run);
  snapshot.draining = entry.draining;
  snapshot.suspect = entry.suspect;
  snapshot.current_run = entry.current_run;
  snapshot.lost_reason = entry.lost_reason;
  snapshot.register_time = entry.register_time;
  snapshot.last_heartbeat_time = entry.last_heartbeat_time;
  snapshot.session = entry.session;
  return snapshot;
}

}  // namespace collbench::scheduling

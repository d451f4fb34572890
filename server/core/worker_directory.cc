// SPDX-License-Identifier: Apache-2.0
#include "server/core/worker_directory.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/capabilities.h"
#include "api/convert.h"
#include "api/ipc_sharing.h"
#include "api/message_bounds.h"
#include "common/host_port.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/worker_labels.h"
#include "server/core/no_io_lock.h"
#include "server/core/worker_credentials.h"

namespace collbench {
namespace {

constexpr char kLockName[] = "WorkerDirectory::mu_";

v1::WorkerState ToProtoState(scheduling::WorkerState state) {
  switch (state) {
    case scheduling::WorkerState::kReady:
      return v1::READY;
    case scheduling::WorkerState::kBusy:
      return v1::BUSY;
    case scheduling::WorkerState::kDraining:
      return v1::DRAINING;
    case scheduling::WorkerState::kLost:
      return v1::LOST;
    case scheduling::WorkerState::kSuspect:
      return v1::SUSPECT;
  }
  return v1::WORKER_STATE_UNSPECIFIED;
}

std::string FullName(absl::string_view name) {
  return absl::StartsWith(name, "workers/") ? std::string(name) : absl::StrCat("workers/", name);
}

// What Register checks of `hello` before it looks at who is registered:
// the result name to count on refusal, and the error.
struct Refusal {
  const char* result;
  absl::Status status;
};

std::optional<Refusal> CheckHello(const v1::Register& hello, const Authorizer& tokens,
                                  scheduling::WorkerRegistration* registration) {
  if (absl::Status joined = tokens.CheckToken(hello.join_token(), Role::kWorker); !joined.ok()) {
    return Refusal{"refused_join_token",
                   absl::PermissionDeniedError(absl::StrCat(
                       "the worker's join token is not accepted: ", joined.message()))};
  }
  if (absl::Status valid = ValidateWorkerId(hello.worker_id()); !valid.ok()) {
    return Refusal{"refused_invalid", valid};
  }
  if (absl::Status valid = ValidateDialAddress(hello.agent_address()); !valid.ok()) {
    return Refusal{"refused_invalid", absl::InvalidArgumentError(absl::StrCat(
                                          "register.agent_address: ", valid.message()))};
  }
  if (absl::Status bounded =
          CheckMessageBounds(hello.inventory(), InventoryBounds(), "register.inventory");
      !bounded.ok()) {
    return Refusal{"refused_invalid", bounded};
  }
  for (const auto& [key, value] : hello.inventory().labels()) {
    if (absl::Status valid = ValidateWorkerLabel(key, value); !valid.ok()) {
      return Refusal{"refused_invalid", absl::InvalidArgumentError(absl::StrCat(
                                            "register.inventory.labels: ", valid.message()))};
    }
  }
  registration->name = absl::StrCat("workers/", hello.worker_id());
  registration->host_id = hello.inventory().host_id();
  registration->slots = hello.slots();
  registration->agent_address = hello.agent_address();
  registration->offers = std::make_shared<const std::vector<std::string>>(
      OffersOf(hello.inventory(), hello.worker_id()));
  if (absl::Status valid = scheduling::WorkerRegistry::Validate(*registration); !valid.ok()) {
    return Refusal{"refused_invalid", valid};
  }
  return std::nullopt;
}

}  // namespace

absl::Status ValidateWorkerId(absl::string_view id) {
  constexpr size_t kMaxLength = 128;
  bool valid = !id.empty() && id.size() <= kMaxLength && id.front() != '.' && id.front() != '-';
  for (const char c : id) {
    valid &= absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("register.worker_id: must be 1 to ", kMaxLength,
                   " letters, digits, '.', '_' or '-', not starting with '.' or '-'"));
}

WorkerDirectory::WorkerDirectory(Store* store, scheduling::WorkerRegistry* registry,
                                 Journal* journal, WorkerDirectoryOptions options)
    : store_(store),
      registry_(registry),
      journal_(journal),
      options_(std::move(options)),
      register_limiter_(options_.register_rate) {}

absl::Status WorkerDirectory::Recover() {
  ASSIGN_OR_RETURN(std::vector<v1::Worker> workers, store_->ListWorkers());
  using Credentials = std::map<std::string, Store::WorkerCredential>;
  ASSIGN_OR_RETURN(Credentials credentials, store_->ListWorkerCredentials());
  NoIoLock lock(&mu_, kLockName);
  credentials_ = std::move(credentials);
  for (v1::Worker& w : workers) {
    w.set_state(v1::LOST);
    w.clear_current_run();
    known_before_start_[w.name()] = std::move(w);
  }
  return absl::OkStatus();
}

absl::Status WorkerDirectory::RefuseLocked(const char* result, absl::string_view who,
                                           absl::string_view peer, absl::Status status) {
  const int64_t count = ++registrations_[result];
  if ((count & (count - 1)) == 0) {
    LogWarn(
        "worker.register_refused",
        absl::StrFormat("registration of %s from %s refused (%s, %d so far): %s", who,
                        peer.empty() ? "an unknown peer" : peer, result, count, status.message()))
        .Str("worker", who)
        .Str("peer", peer)
        .Str("reason", result)
        .Int("count", count)
        .Error(status);
  }
  return status;
}

void WorkerDirectory::RegisterAsync(const v1::Register& hello, absl::Time now,
                                    absl::string_view peer, RegisterDone done) {
  PendingRegistration pending;
  if (std::optional<Refusal> refused = CheckHello(hello, options_.tokens, &pending.registration)) {
    absl::Status status;
    {
      NoIoLock lock(&mu_, kLockName);
      // The id did not pass the checks: it is logged escaped and quoted, as sent.
      const std::string sent =
          absl::StrCat("\"", absl::CHexEscape(hello.worker_id().substr(0, 128)), "\"");
      status = RefuseLocked(refused->result, sent, peer, std::move(refused->status));
    }
    std::move(done)(std::move(status));
    return;
  }
  const std::string name = pending.registration.name;
  pending.result.name = name;
  pending.hello = hello;
  pending.peer = std::string(peer);
  pending.now = now;
  absl::StatusOr<Registration> outcome;
  {
    NoIoLock lock(&mu_, kLockName);
    bool new_name = false;
    const absl::Status admitted = AdmitLocked(pending, &new_name);
    if (admitted.ok() && new_name) {
      // A restarted coordinator must know every secret a worker holds: the
      // reply waits in registering_ until the hash is durable (OnCommitted).
      pending.done = std::move(done);
      registering_.emplace(name, std::move(pending));
      return;
    }
    outcome = admitted.ok() ? CompleteLocked(pending, /*new_name=*/false, absl::OkStatus())
                            : absl::StatusOr<Registration>(admitted);
  }
  std::move(done)(std::move(outcome));
}

absl::StatusOr<WorkerDirectory::Registration> WorkerDirectory::CompleteLocked(
    PendingRegistration& pending, bool new_name, const absl::Status& stored) {
  const std::string& name = pending.result.name;
  const absl::string_view peer = pending.peer;
  if (!stored.ok()) {
    credentials_.erase(name);
    return RefuseLocked("refused_store", name, peer,
                        absl::UnavailableError(absl::StrCat("register: cannot record ", name,
                                                            "'s credential: ", stored.message())));
  }
  const scheduling::WorkerRegistration& registration = pending.registration;
  ASSIGN_OR_RETURN(pending.result.session, JoinLocked(pending.hello, registration, pending.now));
  ++registrations_[new_name ? "new" : "reconnected"];
  LogInfo("worker.registered",
          absl::StrCat(name, " registered from ", peer, " with ", registration.slots, " slots"))
      .Str("worker", name)
      .Str("peer", peer)
      .Str("host_id", registration.host_id)
      .Int("slots", registration.slots)
      .Str("agent_address", registration.agent_address)
      .Int("active_runs", pending.hello.active_runs_size());
  pending.result.reply.set_name(name);
  pending.result.reply.set_heartbeat_interval_ms(
      static_cast<int32_t>(absl::ToInt64Milliseconds(options_.heartbeat_interval)));
  return std::move(pending.result);
}

absl::Status WorkerDirectory::AdmitLocked(PendingRegistration& pending, bool* new_name) {
  const std::string& name = pending.registration.name;
  const absl::string_view peer = pending.peer;
  if (registering_.count(name) > 0 || forgetting_.count(name) > 0) {
    return RefuseLocked(
        "refused_busy", name, peer,
        absl::UnavailableError(absl::StrCat("register: ", name,
                                            " is being registered or forgotten by another "
                                            "call; retry")));
  }
  if (auto known = credentials_.find(name); known != credentials_.end()) {
    if (!WorkerSecretMatches(pending.hello.worker_secret(), known->second.secret_hash)) {
      return RefuseLocked(
          "refused_secret", name, peer,
          absl::PermissionDeniedError(absl::StrCat(
              "register.worker_secret: ", name,
              " is a known worker; only its own secret (issued at its first registration and "
              "kept in its state directory) admits it, the join token alone does not. If the "
              "worker lost its secret, an operator must forget the name first")));
    }
    pending.registration.admit_time = known->second.issue_time;
    return absl::OkStatus();
  }
  if (options_.max_workers > 0 &&
      credentials_.size() >= static_cast<size_t>(options_.max_workers)) {
    return RefuseLocked("refused_max_workers", name, peer,
                        absl::ResourceExhaustedError(absl::StrCat(
                            "register: this coordinator already knows ", credentials_.size(),
                            " workers, its limit (--max-workers); ", name, " is not admitted")));
  }
  if (const absl::Duration wait = register_limiter_.Acquire(PeerAddress(peer), pending.now);
      wait > absl::ZeroDuration()) {
    return RefuseLocked("refused_rate", name, peer,
                        absl::ResourceExhaustedError(absl::StrCat(
                            "register: too many new worker names from ", PeerAddress(peer),
                            " (--register-rate); retry in ", absl::FormatDuration(wait))));
  }
  ASSIGN_OR_RETURN(std::string secret, NewWorkerSecret());
  std::string hash = HashWorkerSecret(secret);
  if (journal_->Append(this, Store::SetWorkerSecretHashWrite{name, hash, pending.now},
                       {.prompt = true}) == 0) {
    return RefuseLocked(
        "refused_store", name, peer,
        absl::UnavailableError(absl::StrCat("register: cannot record ", name,
                                            "'s credential: the coordinator is stopping")));
  }
  credentials_[name] = {std::move(hash), pending.now};
  pending.registration.admit_time = pending.now;
  pending.result.reply.set_worker_secret(std::move(secret));
  *new_name = true;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> WorkerDirectory::JoinLocked(
    const v1::Register& hello, const scheduling::WorkerRegistration& registration, absl::Time now) {
  const std::string& name = registration.name;
  absl::StatusOr<uint64_t> session = registry_->Register(registration, now);
  if (!session.ok()) {
    ++registrations_["refused_invalid"];
    return session.status();
  }
  inventories_[name] = std::make_shared<const v1::Inventory>(hello.inventory());
  // Back after a restart: a drain or quarantine from before holds until an
  // operator lifts it; the registry's entry is listed from now on.
  if (auto before = known_before_start_.find(name); before != known_before_start_.end()) {
    if (before->second.draining()) (void)registry_->Drain(name);
    if (before->second.has_suspect()) {
      (void)registry_->SetSuspect(name, true);
      suspicions_[name] = before->second.suspect();
    }
    known_before_start_.erase(before);
  }
  ASSIGN_OR_RETURN(const scheduling::WorkerSnapshot snapshot, registry_->Get(name));
  v1::Worker worker = WorkerProtoLocked(snapshot);
  worker.set_display_name(hello.display_name());
  SaveRowLocked(std::move(worker));
  return session;
}

void WorkerDirectory::CountRegistration(absl::string_view result) {
  NoIoLock lock(&mu_, kLockName);
  ++registrations_[std::string(result)];
}

std::map<std::string, int64_t> WorkerDirectory::registrations() {
  NoIoLock lock(&mu_, kLockName);
  return registrations_;
}

void WorkerDirectory::Heartbeat(const std::string& worker, uint64_t session, absl::Time now) {
  (void)registry_->Heartbeat(worker, session, now);
}

bool WorkerDirectory::Disconnect(const std::string& worker, uint64_t session) {
  // LOST in the registry (and so in every listing) at once, without this
  // directory's lock: a fleet whose streams all end does not queue here.
  if (!registry_->Disconnect(worker, session)) return false;
  absl::StatusOr<scheduling::WorkerSnapshot> snapshot = registry_->Get(worker);
  if (!snapshot.ok()) return false;
  NoIoLock lock(&mu_, kLockName);
  LostLocked(*snapshot);
  return true;
}

std::vector<scheduling::WorkerSnapshot> WorkerDirectory::ExpireStale(absl::Time now,
                                                                     absl::Duration timeout) {
  std::vector<scheduling::WorkerSnapshot> lost = registry_->ExpireStale(now, timeout);
  if (lost.empty()) return lost;
  NoIoLock lock(&mu_, kLockName);
  for (const scheduling::WorkerSnapshot& worker : lost) LostLocked(worker);
  return lost;
}

void WorkerDirectory::LostLocked(const scheduling::WorkerSnapshot& worker) {
  LogWarn("worker.lost",
          absl::StrCat(worker.name, " lost: ",
                       worker.lost_reason.empty() ? "no reason given" : worker.lost_reason))
      .Str("worker", worker.name)
      .StrIfSet("reason", worker.lost_reason)
      .StrIfSet("run", worker.current_run);
  SaveRowLocked(WorkerProtoLocked(worker));
}

absl::StatusOr<v1::Worker> WorkerDirectory::Drain(absl::string_view name) {
  NoIoLock lock(&mu_, kLockName);
  return SetDrainingLocked(name, true);
}

absl::StatusOr<v1::Worker> WorkerDirectory::Undrain(absl::string_view name) {
  NoIoLock lock(&mu_, kLockName);
  return SetDrainingLocked(name, false);
}

absl::StatusOr<v1::Worker> WorkerDirectory::SetDrainingLocked(absl::string_view name,
                                                              bool draining) {
  const std::string full = FullName(name);
  v1::Worker worker;
  if (registry_->Get(full).ok()) {
    RETURN_IF_ERROR(draining ? registry_->Drain(full) : registry_->Undrain(full));
    ASSIGN_OR_RETURN(const scheduling::WorkerSnapshot snapshot, registry_->Get(full));
    worker = WorkerProtoLocked(snapshot);
  } else if (auto before = known_before_start_.find(full); before != known_before_start_.end()) {
    // Not back since a restart: the row keeps the decision for when it is.
    before->second.set_draining(draining);
    worker = before->second;
  } else {
    return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
  }
  SaveRowLocked(worker);
  LogInfo(
      draining ? "worker.draining" : "worker.undrained",
      absl::StrCat(full, draining ? " drained: it takes no new run until undrained" : " undrained"))
      .Str("worker", full);
  return worker;
}

absl::StatusOr<v1::Worker> WorkerDirectory::Suspect(absl::string_view name,
                                                    const v1::WorkerSuspicion& why) {
  NoIoLock lock(&mu_, kLockName);
  ASSIGN_OR_RETURN(v1::Worker worker, SetSuspectLocked(name, &why));
  LogWarn("worker.suspect", absl::StrCat(worker.name(), " is SUSPECT: ", why.reason()))
      .Str("worker", worker.name())
      .Str("hunt", why.hunt());
  return worker;
}

absl::StatusOr<v1::Worker> WorkerDirectory::Clear(absl::string_view name, absl::string_view by) {
  NoIoLock lock(&mu_, kLockName);
  const std::string full = FullName(name);
  bool suspect = suspicions_.count(full) > 0;
  auto before = known_before_start_.find(full);
  if (!suspect && before != known_before_start_.end()) suspect = before->second.has_suspect();
  if (!suspect) {
    if (!registry_->Get(full).ok() && before == known_before_start_.end()) {
      return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
    }
    return absl::FailedPreconditionError(absl::StrCat(full, " is not SUSPECT"));
  }
  ASSIGN_OR_RETURN(v1::Worker worker, SetSuspectLocked(full, nullptr));
  LogInfo("worker.cleared", absl::StrCat(full, " cleared (", by, "): it takes runs again"))
      .Str("worker", full);
  return worker;
}

absl::StatusOr<v1::Worker> WorkerDirectory::SetSuspectLocked(absl::string_view name,
                                                             const v1::WorkerSuspicion* why) {
  const std::string full = FullName(name);
  v1::Worker worker;
  if (registry_->Get(full).ok()) {
    if (why != nullptr) {
      suspicions_[full] = *why;
    } else {
      suspicions_.erase(full);
    }
    RETURN_IF_ERROR(registry_->SetSuspect(full, why != nullptr));
    ASSIGN_OR_RETURN(const scheduling::WorkerSnapshot snapshot, registry_->Get(full));
    worker = WorkerProtoLocked(snapshot);
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
  SaveRowLocked(worker);
  return worker;
}

absl::Status WorkerDirectory::CheckForgettableLocked(const std::string& full,
                                                     absl::string_view held_by) {
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
  // After a restart, a run waiting for its workers to come back holds one
  // before the registry knows it.
  if (!held_by.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(full, " is held by ", held_by, "; wait for the run to end"));
  }
  if (registering_.count(full) > 0 || forgetting_.count(full) > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(full, " is being registered or forgotten by another call; retry"));
  }
  const bool known = credentials_.count(full) > 0 || known_before_start_.count(full) > 0 ||
                     registry_->Get(full).ok();
  if (!known) return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
  return absl::OkStatus();
}

std::vector<std::string> WorkerDirectory::GoneSince(absl::Time cutoff) {
  NoIoLock lock(&mu_, kLockName);
  std::vector<std::string> gone;
  for (const auto& [name, credential] : credentials_) {
    if (registering_.count(name) > 0 || forgetting_.count(name) > 0) continue;
    absl::Time last_contact = absl::InfiniteFuture();
    if (absl::StatusOr<scheduling::WorkerSnapshot> live = registry_->Get(name); live.ok()) {
      if (live->state == scheduling::WorkerState::kLost) {
        last_contact = std::max(live->last_heartbeat_time, live->register_time);
      }
    } else if (auto before = known_before_start_.find(name); before != known_before_start_.end()) {
      last_contact = std::max(TimeFromTimestamp(before->second.last_heartbeat_time()),
                              TimeFromTimestamp(before->second.register_time()));
    }
    if (last_contact < cutoff) gone.push_back(name);
  }
  return gone;
}

absl::Status WorkerDirectory::Forget(absl::string_view name, absl::string_view held_by) {
  const std::string full = FullName(name);
  uint64_t deleted = 0;
  {
    NoIoLock lock(&mu_, kLockName);
    RETURN_IF_ERROR(CheckForgettableLocked(full, held_by));
    // No row of it is written after the delete: none queued, none saved
    // while it is forgotten.
    unsaved_rows_.erase(full);
    forgetting_.insert(full);
    deleted = journal_->Append(this, Store::DeleteWorkerWrite{full},
                               {.awaited = true, .time = absl::InfinitePast(), .origin = {}});
  }
  const absl::Status stored = journal_->Await(deleted);
  NoIoLock lock(&mu_, kLockName);
  forgetting_.erase(full);
  // NotFound: known only in memory (its row not written yet).
  if (!stored.ok() && !absl::IsNotFound(stored)) return stored;
  (void)registry_->Remove(full);
  inventories_.erase(full);
  credentials_.erase(full);
  suspicions_.erase(full);
  known_before_start_.erase(full);
  LogInfo("worker.forgotten", absl::StrCat("forgot ", full, "; it may register anew"))
      .Str("worker", full);
  return absl::OkStatus();
}

v1::Worker WorkerDirectory::WorkerProtoLocked(const scheduling::WorkerSnapshot& snapshot) const {
  v1::Worker worker;
  worker.set_name(snapshot.name);
  worker.set_state(ToProtoState(snapshot.state));
  *worker.mutable_inventory() = *InventoryOfLocked(snapshot.name);
  worker.set_display_name(worker.inventory().hostname());
  worker.set_agent_address(snapshot.agent_address);
  worker.set_slots(snapshot.slots);
  if (snapshot.admit_time != absl::InfiniteFuture()) {
    *worker.mutable_admit_time() = TimestampFromTime(snapshot.admit_time);
  }
  *worker.mutable_last_heartbeat_time() = TimestampFromTime(snapshot.last_heartbeat_time);
  *worker.mutable_register_time() = TimestampFromTime(snapshot.register_time);
  worker.set_current_run(snapshot.current_run);
  worker.set_draining(snapshot.draining);
  if (snapshot.suspect) {
    if (auto it = suspicions_.find(snapshot.name); it != suspicions_.end()) {
      *worker.mutable_suspect() = it->second;
    }
  }
  return worker;
}

std::vector<v1::Worker> WorkerDirectory::List() {
  return List(0, std::numeric_limits<size_t>::max()).workers;
}

WorkerDirectory::Page WorkerDirectory::List(size_t start, size_t count) {
  NoIoLock lock(&mu_, kLockName);
  Page page;
  if (known_before_start_.empty()) {  // every worker is in the registry: copy only the page
    scheduling::WorkerRegistry::Page live = registry_->ListPage(start, count);
    page.total = live.total;
    page.workers.reserve(live.workers.size());
    for (const scheduling::WorkerSnapshot& snapshot : live.workers) {
      page.workers.push_back(WorkerProtoLocked(snapshot));
    }
    return page;
  }
  // Both by name, merged; a registered worker's entry wins over its row
  // from before the restart.
  const std::vector<scheduling::WorkerSnapshot> live = registry_->List();
  size_t index = 0;
  // Counts an entry; true when it falls on the page.
  auto on_page = [&]() {
    const bool wanted = index >= start && page.workers.size() < count;
    ++index;
    return wanted;
  };
  auto b = known_before_start_.begin();
  size_t l = 0;
  while (b != known_before_start_.end() || l < live.size()) {
    if (l < live.size() && (b == known_before_start_.end() || live[l].name <= b->first)) {
      if (b != known_before_start_.end() && b->first == live[l].name) ++b;
      const scheduling::WorkerSnapshot& snapshot = live[l++];
      if (on_page()) page.workers.push_back(WorkerProtoLocked(snapshot));
    } else {
      const v1::Worker& worker = (b++)->second;
      if (on_page()) page.workers.push_back(worker);
    }
  }
  page.total = index;
  return page;
}

absl::StatusOr<v1::Worker> WorkerDirectory::Get(absl::string_view name) {
  const std::string full = FullName(name);
  NoIoLock lock(&mu_, kLockName);
  if (absl::StatusOr<scheduling::WorkerSnapshot> live = registry_->Get(full); live.ok()) {
    return WorkerProtoLocked(*live);
  }
  if (auto before = known_before_start_.find(full); before != known_before_start_.end()) {
    return before->second;
  }
  return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
}

std::shared_ptr<const v1::Inventory> WorkerDirectory::InventoryOf(const std::string& worker) const {
  NoIoLock lock(&mu_, kLockName);
  return InventoryOfLocked(worker);
}

std::shared_ptr<const v1::Inventory> WorkerDirectory::InventoryOfLocked(
    const std::string& worker) const {
  static const auto* const kNone =
      new std::shared_ptr<const v1::Inventory>(std::make_shared<const v1::Inventory>());
  auto it = inventories_.find(worker);
  return it == inventories_.end() ? *kNone : it->second;
}

FleetView WorkerDirectory::FleetNow() const {
  FleetView fleet;
  fleet.workers = registry_->SchedulerWorkers();
  fleet.limits = options_.limits;
  int total = 0, count = 0, largest = 0;
  uint64_t min_memory = 0;
  std::vector<WorkerIpc> ipc;
  const std::vector<scheduling::WorkerSnapshot> workers = registry_->List();
  NoIoLock lock(&mu_, kLockName);
  for (const scheduling::WorkerSnapshot& w : workers) {
    if (w.state == scheduling::WorkerState::kLost) continue;
    total += w.slots;
    ++count;
    largest = std::max(largest, w.slots);
    const std::shared_ptr<const v1::Inventory> inventory = InventoryOfLocked(w.name);
    if (inventory->memory_bytes() > 0) {
      min_memory = min_memory == 0 ? inventory->memory_bytes()
                                   : std::min(min_memory, inventory->memory_bytes());
    }
    if (w.slots > 0) ipc.push_back(IpcOf(w.name, *inventory));
  }
  // With no workers yet, queue and wait rather than reject.
  if (count > 0) {
    fleet.limits.max_total_slots = total;
    fleet.limits.worker_count = count;
    fleet.limits.max_worker_slots = largest;
    if (min_memory > 0) fleet.limits.min_worker_memory_bytes = min_memory;
    fleet.limits.worker_ipc = std::move(ipc);
  }
  return fleet;
}

void WorkerDirectory::SaveRowLocked(v1::Worker worker) {
  if (forgetting_.count(worker.name()) > 0) return;
  std::string name = worker.name();
  unsaved_rows_[std::move(name)] = std::move(worker);
}

void WorkerDirectory::FlushRows() {
  NoIoLock lock(&mu_, kLockName);
  if (unsaved_rows_.empty()) return;
  Store::UpsertWorkersWrite write;
  write.workers.reserve(unsaved_rows_.size());
  for (auto& [name, worker] : unsaved_rows_) write.workers.push_back(std::move(worker));
  unsaved_rows_.clear();
  journal_->Append(this, std::move(write));
}

void WorkerDirectory::OnCommitted(std::vector<Committed>& writes) {
  // New names' registrations, answered once this lock is let go.
  std::vector<std::pair<RegisterDone, absl::StatusOr<Registration>>> answers;
  {
    NoIoLock lock(&mu_, kLockName);
    for (Committed& committed : writes) {
      auto* secret = std::get_if<Store::SetWorkerSecretHashWrite>(&committed.write);
      if (secret == nullptr) continue;
      auto it = registering_.find(secret->name);
      if (it == registering_.end()) continue;
      PendingRegistration pending = std::move(it->second);
      registering_.erase(it);
      absl::StatusOr<Registration> outcome =
          CompleteLocked(pending, /*new_name=*/true, committed.status);
      answers.emplace_back(std::move(pending.done), std::move(outcome));
    }
    SaveFailedRowsLocked(writes);
  }
  for (auto& [done, outcome] : answers) std::move(done)(std::move(outcome));
}

void WorkerDirectory::SaveFailedRowsLocked(std::vector<Committed>& writes) {
  for (Committed& committed : writes) {
    auto* rows = std::get_if<Store::UpsertWorkersWrite>(&committed.write);
    if (rows == nullptr || committed.status.ok()) continue;
    LogError("store.error", absl::StrCat("saving ", rows->workers.size(), " workers: ",
                                         committed.status.message(), "; kept for the next tick"))
        .Int("workers", static_cast<int64_t>(rows->workers.size()))
        .Error(committed.status);
    // Kept for the next flush, unless a newer state replaced them meanwhile.
    for (v1::Worker& worker : rows->workers) {
      if (forgetting_.count(worker.name()) > 0) continue;
      std::string name = worker.name();
      unsaved_rows_.try_emplace(std::move(name), std::move(worker));
    }
  }
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// RunManager: what workers tell the coordinator (registration, heartbeats,
// run status, logs), the periodic tick, and recovery after a restart. The
// result path is in run_manager_results.cc.
#include <algorithm>
#include <memory>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/worker_labels.h"
#include "api/capabilities.h"
#include "api/convert.h"
#include "common/host_port.h"
#include "common/log.h"
#include "server/core/run_manager.h"

namespace collbench {
namespace {

v1::WorkerState ToProtoState(scheduling::WorkerState state) {
  switch (state) {
    case scheduling::WorkerState::kReady: return v1::READY;
    case scheduling::WorkerState::kBusy: return v1::BUSY;
    case scheduling::WorkerState::kDraining: return v1::DRAINING;
    case scheduling::WorkerState::kLost: return v1::LOST;
    case scheduling::WorkerState::kSuspect: return v1::SUSPECT;
  }
  return v1::WORKER_STATE_UNSPECIFIED;
}

// Results 0..n-1 of a stored list that form an unbroken run from 0.
int64_t ContiguousThrough(const std::vector<v1::SizeResult>& results) {
  int64_t through = -1;
  for (const v1::SizeResult& r : results) {
    if (r.sequence() != through + 1) break;
    ++through;
  }
  return through;
}

// A worker id becomes "workers/{id}", a folder name on workers and a word
// in logs: letters, digits, '.', '_', '-', not starting with '.' or '-'.
absl::Status ValidateWorkerId(absl::string_view id) {
  constexpr size_t kMaxLength = 128;
  bool valid = !id.empty() && id.size() <= kMaxLength && id.front() != '.' && id.front() != '-';
  for (const char c : id) {
    valid &= absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
  }
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "register.worker_id: must be 1 to ", kMaxLength,
      " letters, digits, '.', '_' or '-', not starting with '.' or '-'"));
}

}  // namespace

absl::Status RunManager::Recover(absl::Time now) {
  ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListUnfinishedRuns());
  ASSIGN_OR_RETURN(std::vector<v1::Worker> workers, store_->ListWorkers());
  using SecretHashes = std::map<std::string, std::string>;
  ASSIGN_OR_RETURN(SecretHashes secret_hashes, store_->ListWorkerSecretHashes());
  absl::MutexLock lock(&mu_);
  secret_hashes_ = std::move(secret_hashes);
  // Workers known from before the restart are lost until they come back
  // (a registered worker's registry entry wins in ListWorkers).
  for (v1::Worker& w : workers) {
    w.set_state(v1::LOST);
    w.clear_current_run();
    known_before_start_[w.name()] = std::move(w);
  }
  for (v1::Run& run : runs) {
    LiveRun live;
    if (run.state() == v1::QUEUED) {
      queue_.push_back(run.name());
    } else {
      ASSIGN_OR_RETURN(std::vector<v1::SizeResult> results, store_->ListResults(run.name()));
      live.stored_through = ContiguousThrough(results);
      for (const v1::SizeResult& r : results) {
        if (r.sequence() > live.stored_through) live.stored_ahead.insert(r.sequence());
      }
      run.set_sizes_done(static_cast<int32_t>(results.size()));
      // Its launcher has readopt_grace to reconnect and claim it.
      live.launcher_away_since = now;
      const absl::Duration timeout = run.spec().timeout().seconds() > 0
                                         ? absl::Seconds(run.spec().timeout().seconds())
                                         : options_.default_run_timeout;
      live.deadline = TimeFromTimestamp(run.start_time()) + timeout;
    }
    live.run = std::move(run);
    const std::string name = live.run.name();
    live_[name] = std::move(live);
  }
  LogInfo("coordinator.recovered",
          absl::StrCat("recovered ", live_.size(), " unfinished runs and ",
                       known_before_start_.size(), " workers from the store"))
      .Int("runs", static_cast<int64_t>(live_.size()))
      .Int("workers", static_cast<int64_t>(known_before_start_.size()));
  return absl::OkStatus();
}

absl::StatusOr<RunManager::Registration> RunManager::OnRegister(const v1::Register& hello,
                                                                absl::Time now,
                                                                absl::string_view peer) {
  // Counted always; logged at powers of two per result, so a stranger
  // hammering the port cannot flood the log. The id is escaped: it is
  // whatever the caller sent.
  auto refused = [this, &hello, peer](const char* result, absl::Status status) {
    int64_t count;
    {
      absl::MutexLock lock(&mu_);
      count = ++worker_counts_.registrations[result];
    }
    if ((count & (count - 1)) == 0) {
      const std::string id = absl::CHexEscape(hello.worker_id().substr(0, 128));
      LogWarn("worker.register_refused",
              absl::StrFormat("registration of \"%s\" from %s refused (%s, %d so far): %s", id,
                              peer.empty() ? "an unknown peer" : peer, result, count,
                              status.message()))
          .Str("worker", id)
          .Str("peer", peer)
          .Str("reason", result)
          .Int("count", count)
          .Error(status);
    }
    return status;
  };
  if (absl::Status joined = options_.tokens.CheckToken(hello.join_token(), Role::kWorker);
      !joined.ok()) {
    return refused("refused_join_token",
                   absl::PermissionDeniedError(absl::StrCat(
                       "the worker's join token is not accepted: ", joined.message())));
  }
  if (absl::Status valid = ValidateWorkerId(hello.worker_id()); !valid.ok()) {
    return refused("refused_invalid", valid);
  }
  if (absl::Status valid = ValidateDialAddress(hello.agent_address()); !valid.ok()) {
    return refused("refused_invalid", absl::InvalidArgumentError(absl::StrCat(
                                          "register.agent_address: ", valid.message())));
  }
  for (const auto& [key, value] : hello.inventory().labels()) {
    if (absl::Status valid = ValidateWorkerLabel(key, value); !valid.ok()) {
      return refused("refused_invalid", absl::InvalidArgumentError(absl::StrCat(
                                            "register.inventory.labels: ", valid.message())));
    }
  }
  scheduling::WorkerRegistration registration;
  registration.name = absl::StrCat("workers/", hello.worker_id());
  registration.host_id = hello.inventory().host_id();
  registration.slots = hello.slots();
  registration.agent_address = hello.agent_address();
  registration.offers =
      std::make_shared<const std::vector<std::string>>(OffersOf(hello.inventory(), hello.worker_id()));
  if (absl::Status valid = scheduling::WorkerRegistry::Validate(registration); !valid.ok()) {
    return refused("refused_invalid", valid);
  }
  absl::MutexLock lock(&mu_);
  Registration result;
  RETURN_IF_ERROR(AdmitWorkerLocked(registration.name, hello, peer, now, &result.reply));
  absl::StatusOr<uint64_t> session = registry_->Register(registration, now);
  if (!session.ok()) {
    ++worker_counts_.registrations["refused_invalid"];
    return session.status();
  }
  {
    absl::MutexLock inventories(&inventories_mu_);
    inventories_[registration.name] = std::make_shared<const v1::Inventory>(hello.inventory());
  }
  // Back after a restart: its registry entry is listed from now on (and the
  // store's row is the one SaveWorkerLocked writes below). A drain from
  // before the restart holds until an operator undrains it.
  if (auto before = known_before_start_.find(registration.name);
      before != known_before_start_.end()) {
    if (before->second.draining()) (void)registry_->Drain(registration.name);
    if (before->second.has_suspect()) {  // a quarantine from before the restart holds
      (void)registry_->SetSuspect(registration.name, true);
      absl::MutexLock suspicions(&suspicions_mu_);
      suspicions_[registration.name] = before->second.suspect();
    }
    known_before_start_.erase(before);
  }
  ASSIGN_OR_RETURN(scheduling::WorkerSnapshot snapshot, registry_->Get(registration.name));
  v1::Worker worker = WorkerProto(snapshot);
  worker.set_display_name(hello.display_name());
  SaveWorkerLocked(std::move(worker));
  // After a coordinator restart, runs still hold this worker.
  for (auto& [name, live] : live_) {
    for (const std::string& held : live.run.held_workers()) {
      if (held == registration.name && live.run.state() != v1::QUEUED) {
        (void)registry_->Hold(name, {held}, live.run.spec().placement().share_host());
      }
    }
  }
  for (const std::string& run : hello.active_runs()) AdoptLocked(registration.name, run, now);
  ScheduleLocked(now);
  LogInfo("worker.registered",
          absl::StrCat(registration.name, " registered from ", peer, " with ",
                       registration.slots, " slots"))
      .Str("worker", registration.name)
      .Str("peer", peer)
      .Str("host_id", registration.host_id)
      .Int("slots", registration.slots)
      .Str("agent_address", registration.agent_address)
      .Int("active_runs", hello.active_runs_size());
  result.session = *session;
  result.reply.set_name(registration.name);
  result.reply.set_heartbeat_interval_ms(
      static_cast<int32_t>(absl::ToInt64Milliseconds(options_.heartbeat_interval)));
  return result;
}

void RunManager::AdoptLocked(const std::string& worker, const std::string& run, absl::Time now) {
  LiveRun* live = FindLiveLocked(run);
  if (live == nullptr || live->run.launcher() != worker) {
    // The coordinator gave up on it meanwhile: make sure it stops.
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_run(run);
    cancel.mutable_cancel()->set_reason("the coordinator no longer has this run active");
    link_->Send(worker, cancel);
    return;
  }
  live->launcher_away_since = absl::InfiniteFuture();
  if (live->stored_through >= 0) SendAckLocked(worker, live->run.name(), live->stored_through);
}

void RunManager::OnHeartbeat(const std::string& worker, uint64_t session, absl::Time now) {
  (void)registry_->Heartbeat(worker, session, now);
}

void RunManager::OnDisconnect(const std::string& worker, uint64_t session, absl::Time now) {
  // LOST in the registry (and so in every listing) at once, without
  // waiting for this manager's lock: a fleet whose streams all end does
  // not queue behind it.
  if (!registry_->Disconnect(worker, session)) return;
  absl::MutexLock lock(&mu_);
  // Read under the lock, so a run started meanwhile is seen and failed.
  absl::StatusOr<scheduling::WorkerSnapshot> snapshot = registry_->Get(worker);
  // A reconnect in between superseded this session: nothing was lost.
  if (!snapshot.ok() || snapshot->session != session ||
      snapshot->state != scheduling::WorkerState::kLost) {
    return;
  }
  if (WorkerLostLocked(*snapshot, now)) ScheduleLocked(now);
}

bool RunManager::WorkerLostLocked(const scheduling::WorkerSnapshot& worker, absl::Time now) {
  LogWarn("worker.lost", absl::StrCat(worker.name, " lost: ",
                                      worker.lost_reason.empty() ? "no reason given"
                                                                 : worker.lost_reason))
      .Str("worker", worker.name)
      .StrIfSet("reason", worker.lost_reason)
      .StrIfSet("run", worker.current_run);
  SaveWorkerLocked(WorkerProto(worker));
  LiveRun* live = worker.current_run.empty() ? nullptr : FindLiveLocked(worker.current_run);
  if (live == nullptr || live->cancelling) return false;
  bool ranks_on_it = false;
  for (const v1::RankHost& host : live->run.hosts()) ranks_on_it |= host.worker() == worker.name;
  if (!ranks_on_it) return false;  // held only to keep its host quiet
  if (live->run.launcher() == worker.name) {
    // Maybe only the stream broke; the launcher may come back and claim it.
    live->launcher_away_since = std::min(live->launcher_away_since, now);
    return false;
  }
  // The registry's reason names the worker ("worker workers/x disconnected").
  (void)AbortLocked(*live, v1::FAILED,
                    worker.lost_reason.empty() ? absl::StrCat("worker ", worker.name, " was lost")
                                               : worker.lost_reason,
                    now);  // logged when the store cannot record it
  return true;
}

RunManager::~RunManager() {
  writer_->Stop();
  FlushWorkerRows();
}

void RunManager::SaveWorkerLocked(v1::Worker worker) {
  std::string name = worker.name();
  unsaved_workers_[std::move(name)] = std::move(worker);
}

void RunManager::FlushWorkerRows() {
  absl::MutexLock flushing(&flush_mu_);
  std::map<std::string, v1::Worker> unsaved;
  {
    absl::MutexLock lock(&mu_);
    unsaved.swap(unsaved_workers_);
  }
  if (unsaved.empty()) return;
  std::vector<v1::Worker> rows;
  rows.reserve(unsaved.size());
  for (auto& [name, worker] : unsaved) rows.push_back(std::move(worker));
  if (absl::Status saved = store_->UpsertWorkers(rows); !saved.ok()) {
    LogError("store.error", absl::StrCat("saving ", rows.size(), " workers: ", saved.message(),
                                         "; kept for the next tick"))
        .Int("workers", static_cast<int64_t>(rows.size()))
        .Error(saved);
    // Kept for the next tick, unless a newer state replaced them meanwhile.
    absl::MutexLock lock(&mu_);
    for (v1::Worker& worker : rows) {
      std::string name = worker.name();
      unsaved_workers_.try_emplace(std::move(name), std::move(worker));
    }
  }
}

void RunManager::OnRunStatus(const std::string& worker, const v1::RunStatus& status,
                             absl::Time now) {
  absl::MutexLock lock(&mu_);
  LiveRun* live = FindLiveLocked(status.run());
  if (live == nullptr) return;
  if (live->run.launcher() != worker) {
    RefuseMessageLocked(worker, status.run(), "status_not_launcher");
    return;
  }
  live->launcher_away_since = absl::InfiniteFuture();
  v1::Run& run = live->run;
  if (!IsFinalRunState(status.state())) {
    // SCHEDULED only says the launcher took the run; RUNNING comes with the
    // engine's start.
    if (live->cancelling || status.state() != v1::RUNNING) return;
    run.set_state(v1::RUNNING);
    run.set_sizes_total(status.sizes_total());
    run.set_mpi_version(status.mpi_version());
    run.set_nccl_version(status.nccl_version());
    run.set_environment_fingerprint(status.environment_fingerprint());
    run.mutable_rank_hosts()->Assign(status.rank_hosts().begin(), status.rank_hosts().end());
    (void)SaveLocked(*live);
    PublishStateLocked(*live, now);
    return;
  }
  if (live->cancelling) {
    // The launcher confirms the kill: the workers are free now.
    const std::string name = run.name();
    ReleaseWorkersLocked(name);
    live_.erase(name);
    ScheduleLocked(now);
    return;
  }
  live->final_state = status.state();
  live->final_error = status.error();
  if (status.state() == v1::FAILED && !live->ranks.empty()) {
    // Where every rank was when it failed (a rank that exited without
    // finalising makes the launcher fail the job).
    absl::StrAppend(&live->final_error, "; the ranks when it ended: ",
                    RankPositions(live->ranks));
  }
  live->results_total = status.results_total();
  FinishIfCompleteLocked(*live, now);
  ScheduleLocked(now);
}

void RunManager::OnLog(const std::string& worker, const v1::RunLog& log, absl::Time now) {
  absl::MutexLock lock(&mu_);
  LiveRun* live = FindLiveLocked(log.run());
  if (live == nullptr || live->run.launcher() != worker) {
    RefuseMessageLocked(worker, log.run(), "log_not_launcher");
    return;
  }
  v1::RunEvent event;
  event.set_run(log.run());
  *event.mutable_time() = TimestampFromTime(now);
  *event.mutable_log() = log.line();
  hub_->Publish(event);
}

void RunManager::Tick(absl::Time now) {
  TickLiveState(now);
  FlushWorkerRows();
}

void RunManager::TickLiveState(absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (const scheduling::WorkerSnapshot& lost :
       registry_->ExpireStale(now, options_.heartbeat_timeout)) {
    WorkerLostLocked(lost, now);
  }
  std::vector<std::string> names;
  for (const auto& [name, live] : live_) names.push_back(name);
  for (const std::string& name : names) {
    LiveRun* live = FindLiveLocked(name);
    if (live == nullptr || live->run.state() == v1::QUEUED) continue;
    if (live->cancelling) {
      if (now >= live->cancel_deadline) {
        ReleaseWorkersLocked(name);
        live_.erase(name);
      }
    } else if (now >= live->launcher_away_since + options_.readopt_grace) {
      (void)AbortLocked(*live, v1::FAILED,
                        absl::StrCat("launcher ", live->run.launcher(), " did not come back within ",
                                     absl::FormatDuration(options_.readopt_grace)),
                        now);
    } else if (now >= live->deadline) {
      (void)AbortLocked(*live, v1::FAILED, "timed out", now);
    } else if (live->run.state() == v1::RUNNING) {
      CheckHangLocked(*live, now);
    }
  }
  ScheduleLocked(now);
}

v1::Worker RunManager::WorkerProto(const scheduling::WorkerSnapshot& snapshot) const {
  v1::Worker worker;
  worker.set_name(snapshot.name);
  worker.set_state(ToProtoState(snapshot.state));
  *worker.mutable_inventory() = *InventoryOf(snapshot.name);
  worker.set_display_name(worker.inventory().hostname());
  worker.set_agent_address(snapshot.agent_address);
  worker.set_slots(snapshot.slots);
  *worker.mutable_last_heartbeat_time() = TimestampFromTime(snapshot.last_heartbeat_time);
  *worker.mutable_register_time() = TimestampFromTime(snapshot.register_time);
  worker.set_current_run(snapshot.current_run);
  worker.set_draining(snapshot.draining);
  if (snapshot.suspect) {
    absl::MutexLock suspicions(&suspicions_mu_);
    if (auto it = suspicions_.find(snapshot.name); it != suspicions_.end()) {
      *worker.mutable_suspect() = it->second;
    }
  }
  return worker;
}

std::vector<v1::Worker> RunManager::ListWorkers() {
  return ListWorkers(0, std::numeric_limits<size_t>::max()).workers;
}

RunManager::WorkerPage RunManager::ListWorkers(size_t start, size_t count) {
  std::map<std::string, v1::Worker> before;
  {
    absl::MutexLock lock(&mu_);
    before = known_before_start_;
  }
  if (before.empty()) {  // every worker is in the registry: copy only the page
    scheduling::WorkerRegistry::Page live = registry_->ListPage(start, count);
    WorkerPage page;
    page.total = live.total;
    page.workers.reserve(live.workers.size());
    for (const scheduling::WorkerSnapshot& snapshot : live.workers) {
      page.workers.push_back(WorkerProto(snapshot));
    }
    return page;
  }
  const std::vector<scheduling::WorkerSnapshot> live = registry_->List();  // by name
  // Both by name, merged; a registered worker's entry wins over its row
  // from before the restart.
  WorkerPage page;
  size_t index = 0;
  auto keep = [&](auto make) {
    if (index >= start && page.workers.size() < count) page.workers.push_back(make());
    ++index;
  };
  auto b = before.begin();
  size_t l = 0;
  while (b != before.end() || l < live.size()) {
    if (l < live.size() && (b == before.end() || live[l].name <= b->first)) {
      if (b != before.end() && b->first == live[l].name) ++b;
      const scheduling::WorkerSnapshot& snapshot = live[l++];
      keep([&] { return WorkerProto(snapshot); });
    } else {
      v1::Worker& worker = (b++)->second;
      keep([&] { return std::move(worker); });
    }
  }
  page.total = index;
  return page;
}

absl::StatusOr<v1::Worker> RunManager::GetWorker(absl::string_view name) {
  const std::string full = absl::StartsWith(name, "workers/") ? std::string(name)
                                                               : absl::StrCat("workers/", name);
  // A registered worker is answered from the registry (as ListWorkers
  // would: its entry there wins over the store's); only one known solely
  // from before a restart needs the full listing, store included.
  if (absl::StatusOr<scheduling::WorkerSnapshot> live = registry_->Get(full); live.ok()) {
    return WorkerProto(*live);
  }
  for (v1::Worker& w : ListWorkers()) {
    if (w.name() == full) return w;
  }
  return absl::NotFoundError(absl::StrCat(full, " is not a known worker"));
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// RunManager: placing the queue on workers, starting a run, and a run's end
// (finished, failed, cancelled), all under the lock and written through the
// journal.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "api/ipc_sharing.h"
#include "common/log.h"
#include "common/secrets.h"
#include "flavors/registry.h"
#include "server/core/live_run.h"
#include "server/core/no_io_lock.h"
#include "server/core/run_manager.h"

namespace collbench {
namespace {

// Queued runs that cannot be placed on the registered workers fail only
// after this long, so workers that are still starting up can register.
constexpr absl::Duration kUnsatisfiableGrace = absl::Seconds(30);

// The inventories of a placement's workers, in rank order, and whether
// they share IPC (a worker gone meanwhile has an empty inventory, and
// shares nothing). One worker shares with itself.
struct PlacementFacts {
  std::vector<std::shared_ptr<const v1::Inventory>> inventories;
  IpcSharing sharing;
};

PlacementFacts FactsOf(const scheduling::Assignment& a, const WorkerDirectory& workers) {
  PlacementFacts facts;
  std::vector<WorkerIpc> ipc;
  for (const scheduling::PlacedWorker& p : a.placement) {
    facts.inventories.push_back(workers.InventoryOf(p.worker));
    ipc.push_back(IpcOf(p.worker, *facts.inventories.back()));
  }
  if (ipc.size() > 1) {
    facts.sharing = DecideIpcSharing(ipc);
  } else {  // ranks in one worker share its namespaces, PID included
    facts.sharing.shared = true;
    facts.sharing.single_copy_mechanism = "cma";
  }
  return facts;
}

// What the ranks of `spec` placed as `facts` use for transport
// (Run.effective_transport): the spec's, or for AUTO what the placement
// leaves an MPI library, where that can be known.
v1::Transport ResolvedTransport(const v1::RunSpec& spec, const PlacementFacts& facts) {
  if (spec.transport() != v1::AUTO && spec.transport() != v1::TRANSPORT_UNSPECIFIED) {
    return spec.transport();
  }
  if (spec.backend() == "nccl") return v1::AUTO;  // NVLink, P2P, SHM or a network: NCCL's pick
  if (facts.inventories.size() <= 1) return v1::SHM;  // one node to the MPI library
  for (const auto& inventory : facts.inventories) {
    if (inventory != nullptr && inventory->rdma_devices_size() > 0) return v1::AUTO;
  }
  // A library that connects workers sharing an IPC namespace over shared
  // memory (MPICH's UCX) may pick it there.
  if (FlavorFor(spec.mpi()).ShmAcrossWorkers() && facts.sharing.shared) return v1::AUTO;
  return v1::TCP;
}

// Why SHM cannot connect the picked workers; empty when it can.
std::string ShmRefusal(const v1::RunSpec& spec, const PlacementFacts& facts) {
  if (spec.transport() != v1::SHM) return "";
  if (facts.sharing.shared && facts.sharing.pid_reason.empty()) return "";
  return absl::StrCat("spec.transport: ",
                      facts.sharing.shared
                          ? ShmNeedsOnePidNamespace(facts.sharing)
                          : absl::StrCat("SHM connects ranks on different workers only when "
                                         "they share one IPC namespace on one host: ",
                                         facts.sharing.reason));
}

void EraseFrom(std::deque<std::string>& queue, const std::string& name) {
  auto it = std::find(queue.begin(), queue.end(), name);
  if (it != queue.end()) queue.erase(it);
}

}  // namespace

scheduling::ScheduleInput RunManager::ScheduleInputLocked(const std::vector<std::string>& also) {
  scheduling::ScheduleInput input;
  input.workers = registry_->SchedulerWorkers();
  input.active = registry_->ActiveRuns();
  // A scheduled check's runs (labelled schedule=) come after every user
  // run, in FIFO order among themselves: one never starts ahead of, nor
  // reserves workers before, a user's run that waits.
  for (const bool background : {false, true}) {
    for (const std::string& name : queue_) {
      const LiveRun& live = *live_.at(name);
      if (live.phase != Phase::kQueued || IsBackgroundRun(live.run) != background) continue;
      input.queue.push_back(PendingOf(live.run.spec(), name));
    }
  }
  for (const std::string& name : also) {
    input.queue.push_back(PendingOf(live_.at(name)->run.spec(), name));
  }
  return input;
}

size_t RunManager::StartableLocked(const std::vector<std::string>& group) {
  const scheduling::ScheduleResult result = scheduler_.Schedule(ScheduleInputLocked(group));
  size_t startable = 0;
  for (const scheduling::Assignment& a : result.started) {
    startable += std::find(group.begin(), group.end(), a.run) != group.end();
  }
  return startable;
}

void RunManager::Schedule(absl::Time now) {
  NoIoLock lock(&mu_, kRunLockName);
  ScheduleLocked(now);
}

void RunManager::ScheduleLocked(absl::Time now) {
  // Nothing to place: skip copying the whole fleet (a registration storm
  // calls this once per worker).
  if (queue_.empty()) return;
  const scheduling::ScheduleResult result = scheduler_.Schedule(ScheduleInputLocked({}));
  for (const scheduling::WaitingRun& waiting : result.waiting) {
    if (LiveRun* live = FindLiveLocked(waiting.run)) live->run.set_waiting_reason(waiting.reason);
  }
  for (const scheduling::UnsatisfiableRun& bad : result.unsatisfiable) {
    LiveRun* live = FindLiveLocked(bad.run);
    if (live == nullptr) continue;
    const absl::Time created = TimeFromTimestamp(live->run.create_time());
    if (now - created < kUnsatisfiableGrace) {
      live->run.set_waiting_reason(absl::StrCat(
          "waiting for workers to register: spec.", bad.reason.message(), " (it fails ",
          absl::FormatDuration(kUnsatisfiableGrace), " after it was created unless they do)"));
      continue;
    }
    EraseFrom(queue_, bad.run);
    FinishLocked(*live, v1::FAILED, std::string(bad.reason.message()), now);
  }
  for (const scheduling::Assignment& assignment : result.started) StartLocked(assignment, now);
}

std::string RunManager::LauncherForLocked(const scheduling::Assignment& a) {
  if (a.placement.size() <= 1) return a.launcher();
  if (options_.launchers != nullptr) {
    absl::flat_hash_map<std::string, int> load;
    for (const auto& [name, live] : live_) {
      if (live->phase != Phase::kCreating && live->phase != Phase::kQueued) {
        ++load[live->run.launcher()];
      }
    }
    if (std::optional<std::string> picked = options_.launchers->Pick(load)) return *picked;
  }
  if (!options_.worker_launch_fallback) return "";
  if (!warned_worker_launch_) {
    warned_worker_launch_ = true;
    LogWarn("run.worker_launch",
            absl::StrCat(a.run, " is launched by its worker ", a.launcher(),
                         " because no launcher is connected (--worker-launch=fallback); that "
                         "worker can run code on the run's other workers. Deploy "
                         "collbench-launcher and give --worker-launch=off"))
        .Str("run", a.run)
        .Str("launcher", a.launcher());
  }
  return a.launcher();
}

void RunManager::StartLocked(const scheduling::Assignment& a, absl::Time now) {
  LiveRun* live = FindLiveLocked(a.run);
  if (live == nullptr || live->phase != Phase::kQueued) return;
  live->run.clear_waiting_reason();
  // Validation judged the workers registered then; these are the ones
  // picked. SHM across workers that do not share IPC cannot work.
  const PlacementFacts facts = FactsOf(a, *workers_);
  if (const std::string refusal = ShmRefusal(live->run.spec(), facts); !refusal.empty()) {
    EraseFrom(queue_, a.run);
    FinishLocked(*live, v1::FAILED, refusal, now);
    return;
  }
  const std::string launcher = LauncherForLocked(a);
  if (launcher.empty()) {
    live->run.set_waiting_reason(
        "waiting for a launcher: a run across workers is started only by collbench-launcher "
        "(docs/operations/security.md#the-launcher), and none is connected");
    return;
  }
  // Started by one of its workers: that worker's own ranks start locally.
  const bool launched_by_rank0 = launcher == a.launcher();
  if (!registry_->Hold(a.run, a.held_workers, a.share_host).ok()) return;
  v1::Assignment message;
  message.set_run(a.run);
  *message.mutable_spec() = live->run.spec();
  live->token = RandomHex(16);
  message.set_token(live->token);
  message.set_shared_ipc(facts.sharing.shared && a.placement.size() > 1);
  message.set_single_copy_mechanism(facts.sharing.single_copy_mechanism);
  for (size_t i = 0; i < a.placement.size(); ++i) {
    absl::StatusOr<scheduling::WorkerSnapshot> w = registry_->Get(a.placement[i].worker);
    v1::Peer* peer = message.add_peers();
    peer->set_worker(a.placement[i].worker);
    peer->set_host_alias(i == 0 && launched_by_rank0 ? "localhost" : absl::StrCat("w", i));
    peer->set_agent_address(w.ok() ? w->agent_address : "");
    peer->set_slots(a.placement[i].ranks);
    peer->set_host_id(a.placement[i].host_id);
  }
  // Peers learn the token's digest before the launcher can ask them to run
  // anything; only the launcher holds the token itself.
  bool sent = true;
  const std::string digest = TokenDigest(live->token);
  for (size_t i = launched_by_rank0 ? 1 : 0; i < a.placement.size() && sent; ++i) {
    v1::CoordinatorMessage token;
    token.mutable_run_token()->set_run(a.run);
    token.mutable_run_token()->set_token_sha256(digest);
    token.mutable_run_token()->set_mpi(live->run.spec().mpi());  // Exec runs its daemon only
    sent = link_->Send(a.placement[i].worker, token);
  }
  v1::CoordinatorMessage assignment;
  *assignment.mutable_assignment() = message;
  if (!sent || !link_->Send(launcher, assignment)) {
    registry_->Release(a.run);  // try again at the next tick
    return;
  }
  EraseFrom(queue_, a.run);
  live->phase = Phase::kScheduled;
  v1::Run& run = live->run;
  run.set_state(v1::SCHEDULED);
  run.set_launcher(launcher);
  run.clear_hosts();
  for (size_t i = 0; i < a.placement.size(); ++i) {
    const scheduling::PlacedWorker& p = a.placement[i];
    v1::RankHost* host = run.add_hosts();
    host->set_worker(p.worker);
    host->set_host_id(p.host_id);
    host->set_slots(p.ranks);
    host->set_hostname(facts.inventories[i]->hostname());
    *host->mutable_container() = facts.inventories[i]->container();
    host->mutable_container()->clear_signals();  // the worker's record keeps them
    *host->mutable_worker_labels() = facts.inventories[i]->labels();
  }
  run.set_shared_ipc(message.shared_ipc());
  run.set_single_copy_mechanism(facts.sharing.single_copy_mechanism);
  run.set_effective_transport(ResolvedTransport(run.spec(), facts));
  run.mutable_held_workers()->Assign(a.held_workers.begin(), a.held_workers.end());
  *run.mutable_start_time() = TimestampFromTime(now);
  const absl::Duration timeout =
      run.spec().has_timeout() && run.spec().timeout().seconds() > 0
          ? absl::Seconds(run.spec().timeout().seconds())
          : options_.default_run_timeout;
  live->deadline = now + timeout;
  SaveLocked(*live, now);
}

uint64_t RunManager::AbortLocked(LiveRun& live, v1::RunState state, const std::string& reason,
                                 absl::Time now, bool awaited, v1::Run* ended) {
  const std::string run = live.run.name();
  v1::CoordinatorMessage cancel;
  cancel.mutable_cancel()->set_run(run);
  cancel.mutable_cancel()->set_reason(reason);
  const bool launcher_reachable = link_->Send(live.run.launcher(), cancel);
  v1::CoordinatorMessage release;
  release.mutable_release()->set_run(run);
  for (const v1::RankHost& host : live.run.hosts()) {
    if (host.worker() != live.run.launcher()) link_->Send(host.worker(), release);
  }
  live.run.set_state(state);
  live.run.set_error(reason);
  *live.run.mutable_end_time() = TimestampFromTime(now);
  if (live.run.rank_progress().empty()) *live.run.mutable_rank_progress() = progress_.Progress(run);
  progress_.Drop(run);
  const uint64_t written = SaveLocked(live, now, awaited);
  if (ended != nullptr) *ended = live.run;
  if (!launcher_reachable) {
    // Nobody can confirm the kill; the peers dropped the token already.
    ReleaseWorkersLocked(run);
    live_.erase(run);
    return written;
  }
  live.phase = Phase::kCancelling;
  live.cancel_deadline = now + options_.cancel_grace;
  return written;
}

uint64_t RunManager::FinishLocked(LiveRun& live, v1::RunState state, const std::string& error,
                                  absl::Time now) {
  const std::string run = live.run.name();
  live.run.set_state(state);
  live.run.set_error(error);
  live.run.clear_waiting_reason();
  // Where the ranks were is kept only where it explains the end.
  if (state == v1::SUCCEEDED) {
    live.run.clear_rank_progress();
  } else if (live.run.rank_progress().empty()) {
    *live.run.mutable_rank_progress() = progress_.Progress(run);
  }
  progress_.Drop(run);
  *live.run.mutable_end_time() = TimestampFromTime(now);
  const uint64_t written = SaveLocked(live, now);
  ReleaseWorkersLocked(run);
  live_.erase(run);
  return written;
}

void RunManager::ReleaseWorkersLocked(const std::string& run) {
  v1::CoordinatorMessage release;
  release.mutable_release()->set_run(run);
  for (const std::string& worker : registry_->Release(run)) link_->Send(worker, release);
  // A launcher holds no worker; it drops what it kept of the run too.
  if (const LiveRun* live = FindLiveLocked(run);
      live != nullptr && LauncherPool::IsLauncherName(live->run.launcher())) {
    link_->Send(live->run.launcher(), release);
  }
}

void RunManager::FinishIfCompleteLocked(LiveRun& live, absl::Time now) {
  if (live.phase != Phase::kEnding) return;
  if (live.stored_through + 1 < live.results_total) return;  // results still on their way
  std::string error = live.final_error;
  v1::RunState state = live.final_state;
  if (state == v1::SUCCEEDED && live.run.wrong() > 0) {
    state = v1::FAILED;
    error = absl::StrCat("validation found ", live.run.wrong(), " wrong elements");
  }
  FinishLocked(live, state, error, now);
}

uint64_t RunManager::SaveLocked(const LiveRun& live, absl::Time now, bool awaited) {
  LogRunState(live.run);
  return journal_->Append(this, Store::UpdateRunWrite{live.run, /*with_progress=*/false},
                          {.awaited = awaited, .time = now, .origin = {}});
}

std::string RunManager::HolderOf(const std::string& worker) {
  NoIoLock lock(&mu_, kRunLockName);
  for (const auto& [name, live] : live_) {
    const auto& held = live->run.held_workers();
    if (std::find(held.begin(), held.end(), worker) != held.end()) return name;
  }
  return "";
}

}  // namespace collbench

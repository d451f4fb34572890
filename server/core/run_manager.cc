// SPDX-License-Identifier: Apache-2.0
// RunManager: the caller-facing API, scheduling and completion. The
// worker-facing half (registration, status, results, ticks, recovery) is
// in run_manager_workers.cc, worker identity in run_manager_identity.cc.
#include "server/core/run_manager.h"

#include <google/protobuf/util/message_differencer.h>

#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "api/capabilities.h"
#include "api/convert.h"
#include "api/ipc_sharing.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

std::string RandomHex(int bytes) {
  std::random_device random;
  std::string out;
  for (int i = 0; i < bytes; ++i) absl::StrAppendFormat(&out, "%02x", random() & 0xff);
  return out;
}

scheduling::PlacementPolicy PolicyOf(const v1::Placement& placement) {
  switch (placement.policy()) {
    case v1::SPREAD: return scheduling::PlacementPolicy::kSpread;
    case v1::EXPLICIT: return scheduling::PlacementPolicy::kExplicit;
    default: return scheduling::PlacementPolicy::kPack;
  }
}

scheduling::PendingRun Pending(const v1::Run& run) {
  scheduling::PendingRun pending;
  pending.name = run.name();
  pending.ranks = run.spec().ranks();
  pending.policy = PolicyOf(run.spec().placement());
  pending.workers.assign(run.spec().placement().workers().begin(),
                         run.spec().placement().workers().end());
  pending.ranks_per_worker = run.spec().placement().ranks_per_worker();
  pending.share_host = run.spec().placement().share_host();
  pending.needs = NeedsOf(run.spec());
  return pending;
}

// The inventories of a placement's workers, in rank order, and whether
// they share IPC (a worker gone meanwhile has an empty inventory, and
// shares nothing). One worker shares with itself.
struct PlacementFacts {
  std::vector<std::shared_ptr<const v1::Inventory>> inventories;
  IpcSharing sharing;
};

PlacementFacts FactsOf(const scheduling::Assignment& a,
                       std::vector<std::shared_ptr<const v1::Inventory>> inventories) {
  PlacementFacts facts;
  facts.inventories = std::move(inventories);
  std::vector<WorkerIpc> ipc;
  for (size_t i = 0; i < a.placement.size(); ++i) {
    ipc.push_back(IpcOf(a.placement[i].worker, *facts.inventories[i]));
  }
  if (ipc.size() > 1) {
    facts.sharing = DecideIpcSharing(ipc);
  } else {  // ranks in one worker share its namespaces, PID included
    facts.sharing.shared = true;
    facts.sharing.single_copy_mechanism = "cma";
  }
  return facts;
}

// The state change's log line (docs/design/observability.md#logs): a failure at warn with its
// reason, the others at info.
void LogRunState(const v1::Run& run) {
  const LogLevel level = run.state() == v1::FAILED ? LogLevel::kWarn : LogLevel::kInfo;
  if (!LogEnabled(level)) return;
  const std::string state = v1::RunState_Name(run.state());
  LogEvent(level, "run.state",
           absl::StrCat(run.name(), " ", state, run.error().empty() ? "" : ": ", run.error()))
      .Str("run", run.name())
      .Str("state", state)
      .StrIfSet("error", run.error())
      .StrIfSet("waiting_reason", run.waiting_reason())
      .StrIfSet("launcher", run.launcher())
      .StrIfSet("workers", absl::StrJoin(run.held_workers(), ","))
      .Str("operation", run.spec().operation())
      .Int("ranks", run.spec().ranks());
}

// Queued runs that cannot be placed on the registered workers fail only
// after this long, so workers that are still starting up can register.
constexpr absl::Duration kUnsatisfiableGrace = absl::Seconds(30);

}  // namespace

RunManager::RunManager(Store* store, scheduling::WorkerRegistry* registry, WatchHub* hub,
                       WorkerLink* link, RunManagerOptions options)
    : store_(store),
      registry_(registry),
      hub_(hub),
      link_(link),
      options_(std::move(options)),
      create_limiter_(options_.create_rate),
      register_limiter_(options_.register_rate) {
  writer_ = std::make_unique<ResultWriter>(
      store_,
      [this](const ResultWriter::Batch& batch, const absl::StatusOr<std::vector<bool>>& inserted) {
        OnResultsStored(batch, inserted);
      },
      options_.result_writer);
}

ValidationLimits RunManager::LimitsNow() const {
  ValidationLimits limits = options_.limits;
  int total = 0, count = 0, largest = 0;
  uint64_t min_memory = 0;
  std::vector<WorkerIpc> ipc;
  for (const scheduling::WorkerSnapshot& w : registry_->List()) {
    if (w.state == scheduling::WorkerState::kLost) continue;
    total += w.slots;
    ++count;
    largest = std::max(largest, w.slots);
    const std::shared_ptr<const v1::Inventory> inventory = InventoryOf(w.name);
    if (inventory->memory_bytes() > 0) {
      min_memory = min_memory == 0 ? inventory->memory_bytes()
                                   : std::min(min_memory, inventory->memory_bytes());
    }
    if (w.slots > 0) ipc.push_back(IpcOf(w.name, *inventory));
  }
  // With no workers yet, queue and wait rather than reject.
  if (count > 0) {
    limits.max_total_slots = total;
    limits.worker_count = count;
    limits.max_worker_slots = largest;
    if (min_memory > 0) limits.min_worker_memory_bytes = min_memory;
    limits.worker_ipc = std::move(ipc);
  }
  return limits;
}

absl::StatusOr<v1::Run> RunManager::CreateRun(const v1::RunSpec& spec,
                                              const std::string& request_id, absl::Time now,
                                              absl::string_view caller) {
  // A group of one: the same lookup, admission, checks and placement.
  return std::move(CreateRuns({{spec, request_id}}, now, caller).front());
}

std::vector<absl::StatusOr<v1::Run>> RunManager::CreateRuns(
    const std::vector<RunRequest>& requests, absl::Time now, absl::string_view caller) {
  const ScopedLogField by("caller", caller.empty() ? "anonymous" : caller);
  absl::MutexLock lock(&mu_);
  std::vector<absl::StatusOr<v1::Run>> answers(requests.size(),
                                               absl::UnknownError("not created"));
  // Retries of requests already made get their runs, even past the
  // limits; only new ones are admitted. Every new attempt spends the
  // caller's rate, malformed ones too: they cost the coordinator as much.
  std::vector<size_t> fresh;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].request_id.empty()) {
      absl::StatusOr<v1::Run> existing = store_->FindRunByRequestId(requests[i].request_id);
      if (existing.ok()) {
        answers[i] = SameRequestLocked(*existing, requests[i].spec, requests[i].request_id);
        continue;
      }
      if (!absl::IsNotFound(existing.status())) {
        answers[i] = existing.status();
        continue;
      }
    }
    fresh.push_back(i);
  }
  if (fresh.empty()) return answers;
  if (const absl::Status admitted = AdmitLocked(caller, now); !admitted.ok()) {
    for (const size_t i : fresh) answers[i] = admitted;
    return answers;
  }
  const FleetView fleet = FleetNow();
  std::vector<std::pair<size_t, std::string>> queued;
  bool unplaced = false;  // runs queued since the last placement
  for (const size_t i : fresh) {
    // Runs of the group that can start now do not wait: they are placed
    // before the queue's limit refuses the rest.
    if (unplaced && options_.max_queued_runs > 0 &&
        static_cast<int>(queue_.size()) >= options_.max_queued_runs) {
      ScheduleLocked(now);
      unplaced = false;
    }
    absl::StatusOr<std::string> name =
        QueueRunLocked(requests[i].spec, requests[i].request_id, fleet, now);
    if (name.ok()) {
      queued.emplace_back(i, *std::move(name));
      unplaced = true;
    } else {
      answers[i] = name.status();
    }
  }
  ScheduleLocked(now);
  for (const auto& [i, name] : queued) answers[i] = CreatedRunLocked(name);
  return answers;
}

absl::StatusOr<std::string> RunManager::QueueRunLocked(const v1::RunSpec& spec,
                                                       const std::string& request_id,
                                                       const FleetView& fleet, absl::Time now) {
  RETURN_IF_ERROR(CheckRunLocked(spec, fleet));
  RETURN_IF_ERROR(CheckQueueLengthLocked());
  LiveRun live;
  v1::Run& run = live.run;
  run.set_name(absl::StrCat("runs/", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()),
                            "-", RandomHex(3)));
  // Stored resolved, so every result says how its iterations were
  // separated and runs compare by the transport they asked for.
  *run.mutable_spec() = StoredSpec(spec);
  run.set_state(v1::QUEUED);
  *run.mutable_create_time() = TimestampFromTime(now);
  run.set_request_id(request_id);
  RETURN_IF_ERROR(store_->CreateRun(run));
  std::string name = run.name();
  live_[name] = std::move(live);
  queue_.push_back(name);
  PublishStateLocked(live_[name], now);
  return name;
}

void RunManager::DropRankProgress(const std::string& run) {
  absl::MutexLock progress(&rank_progress_mu_);
  rank_progress_.erase(run);
}

absl::StatusOr<v1::Run> RunManager::CreatedRunLocked(const std::string& name) {
  ASSIGN_OR_RETURN(v1::Run created, store_->GetRun(name));
  WithWaitingReasonLocked(&created);
  return created;
}

absl::Status RunManager::CheckRun(const v1::RunSpec& spec) {
  absl::MutexLock lock(&mu_);
  return CheckRunLocked(spec, FleetNow());
}

RunManager::FleetView RunManager::FleetNow() const {
  return {registry_->SchedulerWorkers(), LimitsNow()};
}

absl::Status RunManager::CheckRunLocked(const v1::RunSpec& spec, const FleetView& fleet) {
  RETURN_IF_ERROR(ValidateRunSpec(spec, fleet.limits));
  return CheckFleetCanRunLocked(spec, fleet);
}

absl::Status RunManager::CheckFleetCanRunLocked(const v1::RunSpec& spec, const FleetView& fleet) {
  // With no workers yet, queue and wait rather than reject.
  if (fleet.workers.empty()) return absl::OkStatus();
  v1::Run run;
  *run.mutable_spec() = spec;
  const absl::Status status = scheduling::CheckSatisfiable(Pending(run), fleet.workers);
  if (status.ok()) return status;
  return absl::InvalidArgumentError(absl::StrCat("spec.", status.message()));
}

absl::StatusOr<v1::Run> RunManager::SameRequestLocked(const v1::Run& existing,
                                                      const v1::RunSpec& spec,
                                                      const std::string& request_id) {
  // A retry of the same request gets the run it made; the same id with
  // another spec is a caller's mistake, not a retry (AIP-155).
  if (ValidateRunSpec(spec, ValidationLimits()).ok() &&
      google::protobuf::util::MessageDifferencer::Equals(StoredSpec(spec), existing.spec())) {
    return existing;
  }
  return absl::AlreadyExistsError(absl::StrCat(
      "request_id: \"", request_id, "\" was used for ", existing.name(),
      " with a different spec; a retry must send the same spec, a new run needs a new "
      "request_id"));
}

absl::StatusOr<v1::Run> RunManager::GetRun(absl::string_view name) {
  ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(name));
  if (run.state() == v1::QUEUED) {
    absl::MutexLock lock(&mu_);
    WithWaitingReasonLocked(&run);
  } else if (run.state() == v1::RUNNING) {
    // Where its ranks are now (kept live, not written at every change).
    // Not under mu_: GetRun is called with the watch hub's lock held.
    absl::MutexLock lock(&rank_progress_mu_);
    if (auto it = rank_progress_.find(run.name()); it != rank_progress_.end()) {
      *run.mutable_rank_progress() = it->second;
    }
  }
  return run;
}

absl::StatusOr<Store::RunPage> RunManager::ListRuns(int page_size, absl::string_view page_token,
                                                    v1::RunState state) {
  ASSIGN_OR_RETURN(Store::RunPage page, store_->ListRuns(page_size, page_token, state));
  const bool any_queued = std::any_of(page.runs.begin(), page.runs.end(),
                                      [](const v1::Run& r) { return r.state() == v1::QUEUED; });
  if (any_queued) {
    absl::MutexLock lock(&mu_);
    for (v1::Run& run : page.runs) WithWaitingReasonLocked(&run);
  }
  return page;
}

void RunManager::WithWaitingReasonLocked(v1::Run* run) {
  if (run->state() != v1::QUEUED) return;
  if (const LiveRun* live = FindLiveLocked(run->name())) {
    run->set_waiting_reason(live->run.waiting_reason());
  }
}

absl::StatusOr<std::vector<v1::SizeResult>> RunManager::GetResults(absl::string_view name) {
  RETURN_IF_ERROR(store_->GetRun(name).status());
  return store_->ListResults(name);
}

bool IsBackgroundRun(const v1::Run& run) {
  return run.spec().labels().contains(std::string(kScheduleLabel));
}

absl::Status RunManager::WorkersIdle(absl::string_view selector) {
  absl::MutexLock lock(&mu_);
  if (!queue_.empty()) {
    return absl::UnavailableError(absl::StrCat(queue_.size(), queue_.size() == 1 ? " run" : " runs",
                                               " queued (", queue_.front(), " first)"));
  }
  for (const auto& [name, live] : live_) {
    for (const std::string& worker : live.run.held_workers()) {
      const std::shared_ptr<const v1::Inventory> inventory = InventoryOf(worker);
      if (selector.empty() || SelectorMatches(selector, worker, *inventory)) {
        return absl::UnavailableError(absl::StrCat(name, " holds ", worker));
      }
    }
  }
  return absl::OkStatus();
}

int RunManager::queued_count() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

AdmissionRejections RunManager::admission_rejections() {
  absl::MutexLock lock(&mu_);
  return rejections_;
}

absl::Status RunManager::AdmitLocked(absl::string_view caller, absl::Time now) {
  const absl::string_view who = caller.empty() ? "anonymous" : caller;
  const absl::Duration wait = create_limiter_.Acquire(who, now);
  if (wait == absl::ZeroDuration()) return absl::OkStatus();
  ++rejections_.rate_limited;
  const int64_t retry_s = RetryAfterWholeSeconds(wait);
  return WithRetryAfter(
      absl::ResourceExhaustedError(absl::StrFormat(
          "create rate limit: at most %g runs per second (burst %d) per caller; retry after "
          "%d s",
          options_.create_rate.per_second, options_.create_rate.burst, retry_s)),
      retry_s);
}

absl::Status RunManager::CheckQueueLengthLocked() {
  if (options_.max_queued_runs <= 0 ||
      static_cast<int>(queue_.size()) < options_.max_queued_runs) {
    return absl::OkStatus();
  }
  ++rejections_.queue_full;
  const int64_t retry_s = RetryAfterWholeSeconds(options_.queue_full_retry_after);
  return WithRetryAfter(
      absl::ResourceExhaustedError(absl::StrCat(
          "queue limit: ", queue_.size(), " runs are queued, the maximum (--max-queued-runs ",
          options_.max_queued_runs, "); retry after ", retry_s, " s")),
      retry_s);
}

absl::StatusOr<v1::Run> RunManager::CancelRun(absl::string_view name, absl::Time now) {
  absl::MutexLock lock(&mu_);
  LiveRun* live = FindLiveLocked(name);
  if (live == nullptr || live->cancelling) {
    ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(name));
    return absl::FailedPreconditionError(absl::StrCat(
        run.name(), " already ended (", v1::RunState_Name(run.state()), ")"));
  }
  const std::string run_name = live->run.name();
  constexpr char kReason[] = "cancelled by request";
  absl::Status saved = absl::OkStatus();
  if (live->run.state() == v1::QUEUED) {
    // Stored before the queue lets go of it: a cancel the store cannot
    // record (its disk is full) is refused whole and the run stays queued,
    // where it would otherwise come back queued after a restart.
    v1::Run cancelled = live->run;
    cancelled.set_state(v1::CANCELLED);
    cancelled.set_error(kReason);
    *cancelled.mutable_end_time() = TimestampFromTime(now);
    RETURN_IF_ERROR(store_->UpdateRunExceptProgress(cancelled));
    queue_.erase(std::find(queue_.begin(), queue_.end(), run_name));
    FinishLocked(*live, v1::CANCELLED, kReason, now);
  } else {
    saved = AbortLocked(*live, v1::CANCELLED, kReason, now);
  }
  ScheduleLocked(now);
  if (!saved.ok()) {
    return absl::Status(saved.code(), absl::StrCat(run_name, " is being stopped, but the cancel "
                                                   "is not recorded: ", saved.message()));
  }
  return store_->GetRun(run_name);
}

void RunManager::ScheduleLocked(absl::Time now) {
  // Nothing to place: skip copying the whole fleet (a registration storm
  // calls this once per worker).
  if (queue_.empty()) return;
  scheduling::ScheduleInput input;
  input.workers = registry_->SchedulerWorkers();
  input.active = registry_->ActiveRuns();
  // A scheduled check's runs (labelled schedule=) come after every user
  // run, in FIFO order among themselves: one never starts ahead of, nor
  // reserves workers before, a user's run that waits.
  for (const bool background : {false, true}) {
    for (const std::string& name : queue_) {
      const v1::Run& run = live_[name].run;
      if (IsBackgroundRun(run) == background) input.queue.push_back(Pending(run));
    }
  }
  const scheduling::ScheduleResult result = scheduler_.Schedule(input);
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
    queue_.erase(std::find(queue_.begin(), queue_.end(), bad.run));
    FinishLocked(*live, v1::FAILED, std::string(bad.reason.message()), now);
  }
  for (const scheduling::Assignment& assignment : result.started) StartLocked(assignment, now);
}

namespace {

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

}  // namespace

void RunManager::StartLocked(const scheduling::Assignment& a, absl::Time now) {
  LiveRun* live = FindLiveLocked(a.run);
  if (live == nullptr) return;
  live->run.clear_waiting_reason();
  // Validation judged the workers registered then; these are the ones
  // picked. SHM across workers that do not share IPC cannot work.
  std::vector<std::shared_ptr<const v1::Inventory>> inventories;
  for (const scheduling::PlacedWorker& p : a.placement) inventories.push_back(InventoryOf(p.worker));
  const PlacementFacts facts = FactsOf(a, std::move(inventories));
  if (live->run.spec().transport() == v1::SHM &&
      (!facts.sharing.shared || !facts.sharing.pid_reason.empty())) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), a.run));
    FinishLocked(*live, v1::FAILED,
                 absl::StrCat("spec.transport: ",
                              facts.sharing.shared
                                  ? ShmNeedsOnePidNamespace(facts.sharing)
                                  : absl::StrCat("SHM connects ranks on different workers only "
                                                 "when they share one IPC namespace on one "
                                                 "host: ",
                                                 facts.sharing.reason)),
                 now);
    return;
  }
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
    peer->set_host_alias(i == 0 ? "localhost" : absl::StrCat("w", i));
    peer->set_agent_address(w.ok() ? w->agent_address : "");
    peer->set_slots(a.placement[i].ranks);
    peer->set_host_id(a.placement[i].host_id);
  }
  // Peers learn the token before the launcher can ask them to run anything.
  bool sent = true;
  for (size_t i = 1; i < a.placement.size() && sent; ++i) {
    v1::CoordinatorMessage token;
    token.mutable_run_token()->set_run(a.run);
    token.mutable_run_token()->set_token(live->token);
    token.mutable_run_token()->set_mpi(live->run.spec().mpi());  // Exec runs its daemon only
    sent = link_->Send(a.placement[i].worker, token);
  }
  v1::CoordinatorMessage assignment;
  *assignment.mutable_assignment() = message;
  if (!sent || !link_->Send(a.launcher(), assignment)) {
    registry_->Release(a.run);  // try again at the next tick
    return;
  }
  queue_.erase(std::find(queue_.begin(), queue_.end(), a.run));
  v1::Run& run = live->run;
  run.set_state(v1::SCHEDULED);
  run.set_launcher(a.launcher());
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
  (void)SaveLocked(*live);  // logged; the run goes on
  PublishStateLocked(*live, now);
}

absl::Status RunManager::AbortLocked(LiveRun& live, v1::RunState state,
                                     const std::string& reason, absl::Time now) {
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
  DropRankProgress(run);
  absl::Status saved = SaveLocked(live);
  PublishStateLocked(live, now);
  hub_->End(run);
  if (!launcher_reachable) {
    // Nobody can confirm the kill; the peers dropped the token already.
    ReleaseWorkersLocked(run);
    live_.erase(run);
    return saved;
  }
  live.cancelling = true;
  live.cancel_deadline = now + options_.cancel_grace;
  return saved;
}

void RunManager::FinishLocked(LiveRun& live, v1::RunState state, const std::string& error,
                              absl::Time now) {
  const std::string run = live.run.name();
  live.run.set_state(state);
  live.run.set_error(error);
  live.run.clear_waiting_reason();
  // Where the ranks were is kept only where it explains the end.
  if (state == v1::SUCCEEDED) live.run.clear_rank_progress();
  DropRankProgress(run);
  *live.run.mutable_end_time() = TimestampFromTime(now);
  (void)SaveLocked(live);  // logged; the run is over either way
  PublishStateLocked(live, now);
  hub_->End(run);
  ReleaseWorkersLocked(run);
  live_.erase(run);
}

void RunManager::ReleaseWorkersLocked(const std::string& run) {
  v1::CoordinatorMessage release;
  release.mutable_release()->set_run(run);
  for (const std::string& worker : registry_->Release(run)) link_->Send(worker, release);
}

void RunManager::FinishIfCompleteLocked(LiveRun& live, absl::Time now) {
  if (live.final_state == v1::RUN_STATE_UNSPECIFIED) return;
  if (live.stored_through + 1 < live.results_total) return;  // results still on their way
  std::string error = live.final_error;
  v1::RunState state = live.final_state;
  if (state == v1::SUCCEEDED && live.run.wrong() > 0) {
    state = v1::FAILED;
    error = absl::StrCat("validation found ", live.run.wrong(), " wrong elements");
  }
  FinishLocked(live, state, error, now);
}

absl::Status RunManager::SaveLocked(LiveRun& live) {
  absl::Status status = store_->UpdateRunExceptProgress(live.run);
  if (!status.ok()) {
    LogError("store.error", absl::StrCat("saving ", live.run.name(), ": ", status.message()))
        .Str("run", live.run.name())
        .Str("state", v1::RunState_Name(live.run.state()))
        .Error(status);
  }
  return status;
}

void RunManager::PublishStateLocked(const LiveRun& live, absl::Time now) {
  LogRunState(live.run);
  v1::RunEvent event;
  event.set_run(live.run.name());
  *event.mutable_time() = TimestampFromTime(now);
  *event.mutable_state_change() = live.run;
  hub_->Publish(event);
}

std::shared_ptr<const v1::Inventory> RunManager::InventoryOf(const std::string& worker) const {
  static const auto* const kNone = new std::shared_ptr<const v1::Inventory>(
      std::make_shared<const v1::Inventory>());
  absl::MutexLock lock(&inventories_mu_);
  auto it = inventories_.find(worker);
  return it == inventories_.end() ? *kNone : it->second;
}

RunManager::LiveRun* RunManager::FindLiveLocked(absl::string_view name) {
  auto it = live_.find(name);
  if (it == live_.end() && !absl::StartsWith(name, "runs/")) {
    it = live_.find(absl::StrCat("runs/", name));
  }
  return it == live_.end() ? nullptr : &it->second;
}

}  // namespace collbench

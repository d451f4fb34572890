// SPDX-License-Identifier: Apache-2.0
// RunManager: the caller-facing API (create, check, get, list, cancel,
// delete). Placement and a run's end are in run_manager_schedule.cc, what
// workers report in run_manager_workers.cc, the result path and the
// journal's reports in run_manager_results.cc.
#include "server/core/run_manager.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/capabilities.h"
#include "api/convert.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/core/live_run.h"
#include "server/core/no_io_lock.h"

namespace collbench {

RunManager::RunManager(Store* store, scheduling::WorkerRegistry* registry,
                       WorkerDirectory* workers, Journal* journal, WatchHub* hub,
                       WorkerLink* link, RunManagerOptions options)
    : store_(store),
      registry_(registry),
      workers_(workers),
      journal_(journal),
      hub_(hub),
      link_(link),
      options_(std::move(options)),
      create_limiter_(options_.create_rate) {}

RunManager::~RunManager() = default;

absl::StatusOr<v1::Run> RunManager::CreateRun(const v1::RunSpec& spec,
                                              const std::string& request_id, absl::Time now,
                                              absl::string_view caller) {
  // A group of one: the same lookup, admission, checks and placement.
  return std::move(CreateRuns({{spec, request_id}}, now, caller).front());
}

std::vector<absl::StatusOr<v1::Run>> RunManager::CreateRuns(
    const std::vector<RunRequest>& requests, absl::Time now, absl::string_view caller) {
  const ScopedLogField by("caller", caller.empty() ? "anonymous" : caller);
  std::vector<absl::StatusOr<v1::Run>> answers(requests.size(),
                                               absl::UnknownError("not created"));
  // Retries of requests already made get their runs, even past the
  // limits; only new ones are admitted.
  std::vector<size_t> fresh;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].request_id.empty()) {
      absl::StatusOr<v1::Run> existing = store_->FindRunByRequestId(requests[i].request_id);
      if (existing.ok()) {
        answers[i] = SameRequest(*existing, requests[i].spec, requests[i].request_id);
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
  std::map<size_t, std::pair<std::string, uint64_t>> waits;  // request -> run, its write
  {
    NoIoLock lock(&mu_, kRunLockName);
    AdmitLocked(requests, fresh, now, caller, &answers, &waits);
  }
  for (const auto& [i, wait] : waits) {
    const auto& [name, written] = wait;
    const absl::Status stored = journal_->Await(written);
    if (stored.ok()) {
      answers[i] = StoredRun(name);
    } else if (absl::IsAlreadyExists(stored) && !requests[i].request_id.empty()) {
      // Another call made a run with this request id meanwhile.
      absl::StatusOr<v1::Run> existing = store_->FindRunByRequestId(requests[i].request_id);
      answers[i] = existing.ok() ? SameRequest(*existing, requests[i].spec, requests[i].request_id)
                                 : stored;
    } else {
      answers[i] = stored;
    }
  }
  return answers;
}

void RunManager::AdmitLocked(const std::vector<RunRequest>& requests,
                             const std::vector<size_t>& fresh, absl::Time now,
                             absl::string_view caller,
                             std::vector<absl::StatusOr<v1::Run>>* answers,
                             std::map<size_t, std::pair<std::string, uint64_t>>* waits) {
  // Every new attempt spends the caller's rate, malformed ones too: they
  // cost the coordinator as much.
  if (const absl::Status admitted = RateLocked(caller, now); !admitted.ok()) {
    for (const size_t i : fresh) (*answers)[i] = admitted;
    return;
  }
  const FleetView fleet = workers_->FleetNow();
  std::vector<std::string> group;  // this group's new runs, in order
  for (const size_t i : fresh) {
    absl::StatusOr<ValidatedRunSpec> spec = CheckLocked(requests[i].spec, fleet);
    if (!spec.ok()) {
      (*answers)[i] = spec.status();
      continue;
    }
    if (absl::Status room = CheckQueueLengthLocked(group); !room.ok()) {
      (*answers)[i] = room;
      continue;
    }
    auto live = std::make_unique<LiveRun>();
    v1::Run& run = live->run;
    run.set_name(NewRunName(now));
    *run.mutable_spec() = (*std::move(spec)).spec();
    run.set_state(v1::QUEUED);
    *run.mutable_create_time() = TimestampFromTime(now);
    run.set_request_id(requests[i].request_id);
    live->phase = Phase::kCreating;
    ++creating_;
    LogRunState(run);
    const uint64_t written =
        journal_->Append(this, Store::CreateRunWrite{run}, {.awaited = true, .time = now, .origin = {}});
    (*waits)[i] = {run.name(), written};
    group.push_back(run.name());
    live_[run.name()] = std::move(live);
  }
}

absl::StatusOr<ValidatedRunSpec> RunManager::CheckLocked(const v1::RunSpec& spec,
                                                         const FleetView& fleet) {
  // Stored resolved, so every result says how its iterations were separated
  // and runs compare by the transport they asked for.
  ASSIGN_OR_RETURN(ValidatedRunSpec checked, ValidatedRunSpec::Validate(spec, fleet.limits));
  // With no workers yet, queue and wait rather than reject.
  if (fleet.workers.empty()) return checked;
  const absl::Status status =
      scheduling::CheckSatisfiable(PendingOf(checked.spec(), ""), fleet.workers);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("spec.", status.message()));
  return checked;
}

absl::Status RunManager::CheckRun(const v1::RunSpec& spec) {
  const FleetView fleet = workers_->FleetNow();
  NoIoLock lock(&mu_, kRunLockName);
  return CheckLocked(spec, fleet).status();
}

absl::StatusOr<v1::Run> RunManager::SameRequest(const v1::Run& existing,
                                                const v1::RunSpec& spec,
                                                const std::string& request_id) {
  // A retry of the same request gets the run it made; the same id with
  // another spec is a caller's mistake, not a retry (AIP-155).
  absl::StatusOr<ValidatedRunSpec> resolved = ValidatedRunSpec::Validate(spec, ValidationLimits());
  if (resolved.ok() &&
      google::protobuf::util::MessageDifferencer::Equals(resolved->spec(), existing.spec())) {
    return existing;
  }
  return absl::AlreadyExistsError(absl::StrCat(
      "request_id: \"", request_id, "\" was used for ", existing.name(),
      " with a different spec; a retry must send the same spec, a new run needs a new "
      "request_id"));
}

absl::StatusOr<v1::Run> RunManager::StoredRun(const std::string& name) {
  std::optional<v1::Run> live;
  uint64_t written = 0;
  {
    NoIoLock lock(&mu_, kRunLockName);
    if (const LiveRun* run = FindLiveLocked(name); run != nullptr) {
      live = run->run;
      written = journal_->last_appended();
    }
  }
  if (!live.has_value()) return GetRun(name);
  // Every change it shows is appended by now: it is answered once stored.
  journal_->Await(written).IgnoreError();
  return *std::move(live);
}

absl::StatusOr<v1::Run> RunManager::GetRun(absl::string_view name) {
  ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(name));
  if (run.state() == v1::QUEUED) {
    NoIoLock lock(&mu_, kRunLockName);
    WithWaitingReasonLocked(&run);
  } else if (run.state() == v1::RUNNING) {
    // Where its ranks are now (kept live, not written at every change).
    *run.mutable_rank_progress() = progress_.Progress(run.name());
  }
  return run;
}

absl::StatusOr<Store::RunPage> RunManager::ListRuns(int page_size, absl::string_view page_token,
                                                    v1::RunState state) {
  ASSIGN_OR_RETURN(Store::RunPage page, store_->ListRuns(page_size, page_token, state));
  const bool any_queued = std::any_of(page.runs.begin(), page.runs.end(),
                                      [](const v1::Run& r) { return r.state() == v1::QUEUED; });
  if (any_queued) {
    NoIoLock lock(&mu_, kRunLockName);
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
  NoIoLock lock(&mu_, kRunLockName);
  if (!queue_.empty()) {
    return absl::UnavailableError(absl::StrCat(queue_.size(), queue_.size() == 1 ? " run" : " runs",
                                               " queued (", queue_.front(), " first)"));
  }
  for (const auto& [name, live] : live_) {
    for (const std::string& worker : live->run.held_workers()) {
      const std::shared_ptr<const v1::Inventory> inventory = workers_->InventoryOf(worker);
      if (selector.empty() || SelectorMatches(selector, worker, *inventory)) {
        return absl::UnavailableError(absl::StrCat(name, " holds ", worker));
      }
    }
  }
  return absl::OkStatus();
}

int RunManager::queued_count() {
  NoIoLock lock(&mu_, kRunLockName);
  return static_cast<int>(queue_.size());
}

AdmissionRejections RunManager::admission_rejections() {
  NoIoLock lock(&mu_, kRunLockName);
  return rejections_;
}

std::map<std::string, int64_t> RunManager::refused_messages() {
  NoIoLock lock(&mu_, kRunLockName);
  return refused_messages_;
}

void RunManager::FlushJournal() { journal_->Flush(); }

absl::Status RunManager::RateLocked(absl::string_view caller, absl::Time now) {
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

absl::Status RunManager::CheckQueueLengthLocked(const std::vector<std::string>& group) {
  if (options_.max_queued_runs <= 0) return absl::OkStatus();
  // What waits: the queue, and the runs being created, except those of this
  // group that will start at once (they are placed once stored).
  size_t waiting = queue_.size() + creating_;
  if (waiting >= static_cast<size_t>(options_.max_queued_runs) && !group.empty()) {
    waiting -= StartableLocked(group);
  }
  if (waiting < static_cast<size_t>(options_.max_queued_runs)) return absl::OkStatus();
  ++rejections_.queue_full;
  const int64_t retry_s = RetryAfterWholeSeconds(options_.queue_full_retry_after);
  return WithRetryAfter(
      absl::ResourceExhaustedError(absl::StrCat(
          "queue limit: ", waiting, " runs are queued, the maximum (--max-queued-runs ",
          options_.max_queued_runs, "); retry after ", retry_s, " s")),
      retry_s);
}

absl::StatusOr<v1::Run> RunManager::CancelRun(absl::string_view name, absl::Time now) {
  constexpr char kReason[] = "cancelled by request";
  std::string run_name;
  v1::Run cancelled;  // as the cancel writes it
  uint64_t written = 0;
  bool queued = false;
  {
    NoIoLock lock(&mu_, kRunLockName);
    LiveRun* live = FindLiveLocked(name);
    if (live != nullptr && live->phase != Phase::kCreating) {
      run_name = live->run.name();
      switch (live->phase) {
        case Phase::kWithdrawing:
        case Phase::kCancelling:
          return absl::FailedPreconditionError(absl::StrCat(
              run_name, " already ended (", v1::RunState_Name(live->run.state()), ")"));
        case Phase::kQueued:
          // Out of the queue, but back in it if the store cannot record the
          // cancel: a run whose cancel is refused stays queued, where it
          // would otherwise come back queued after a restart.
          queued = true;
          live->phase = Phase::kWithdrawing;
          live->run.set_state(v1::CANCELLED);
          live->run.set_error(kReason);
          live->run.clear_waiting_reason();
          *live->run.mutable_end_time() = TimestampFromTime(now);
          cancelled = live->run;
          written = SaveLocked(*live, now, /*awaited=*/true);
          break;
        default:
          written = AbortLocked(*live, v1::CANCELLED, kReason, now, /*awaited=*/true, &cancelled);
          ScheduleLocked(now);
      }
    }
  }
  if (run_name.empty()) {  // not live: ended (or unknown)
    ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(name));
    return absl::FailedPreconditionError(absl::StrCat(
        run.name(), " already ended (", v1::RunState_Name(run.state()), ")"));
  }
  const absl::Status saved = journal_->Await(written);
  if (!saved.ok()) {
    if (queued) return saved;  // OnCommitted put it back in the queue
    return absl::Status(saved.code(), absl::StrCat(run_name, " is being stopped, but the cancel "
                                                   "is not recorded: ", saved.message()));
  }
  return cancelled;
}

absl::Status RunManager::DeleteRun(absl::string_view name) {
  const std::string full = FullRunName(name);
  {
    NoIoLock lock(&mu_, kRunLockName);
    if (const LiveRun* live = FindLiveLocked(full)) return NotDeletable(live->run, live->phase);
  }
  // Not live, so it never will be again (runs become live only when created
  // or recovered) and OnResult appends nothing more of it. What it appended
  // while live is written now, while its row still exists, so none of it
  // lands after the delete.
  ASSIGN_OR_RETURN(const v1::Run run, store_->GetRun(full));
  journal_->Flush();
  RETURN_IF_ERROR(store_->DeleteRun(full));
  hub_->PublishDeleted({full});
  LogInfo("run.deleted", absl::StrCat("deleted ", full, " (", v1::RunState_Name(run.state()),
                                      ") and its results"))
      .Str("run", full);
  return absl::OkStatus();
}

RunManager::Deleted RunManager::DeleteFinishedRuns(const std::vector<std::string>& names) {
  std::vector<std::string> past;
  {
    NoIoLock lock(&mu_, kRunLockName);
    // A cancelled run whose kill is unconfirmed goes in a later pass.
    for (const std::string& name : names) {
      if (FindLiveLocked(name) == nullptr) past.push_back(name);
    }
  }
  Deleted deleted;
  if (past.empty()) return deleted;
  journal_->Flush();  // as DeleteRun: nothing of them lands after the delete
  for (std::string& name : past) {
    absl::Status status = store_->DeleteRun(name);
    if (status.ok()) {
      deleted.names.push_back(std::move(name));
    } else if (!absl::IsNotFound(status)) {  // NotFound: deleted meanwhile by a caller
      deleted.error = absl::Status(status.code(),
                                   absl::StrCat("deleting ", name, ": ", status.message()));
      break;
    }
  }
  hub_->PublishDeleted(deleted.names);
  return deleted;
}

RunManager::LiveRun* RunManager::FindLiveLocked(absl::string_view name) {
  auto it = live_.find(name);
  if (it == live_.end() && !absl::StartsWith(name, "runs/")) {
    it = live_.find(absl::StrCat("runs/", name));
  }
  return it == live_.end() ? nullptr : it->second.get();
}

}  // namespace collbench

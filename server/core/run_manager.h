// SPDX-License-Identifier: Apache-2.0
// The run lifecycle (docs/design/run-lifecycle.md): admission, the FIFO
// queue, scheduling onto workers, launch, results, completion, cancel,
// timeouts, lost workers, and recovery after a coordinator restart. The API
// is a thin translation onto this class; tests drive it directly with an
// in-memory store and a fake WorkerLink. Who the workers are is the
// WorkerDirectory's; what a worker's stream says reaches this class through
// the Fleet (server/core/fleet.h).
//
// Run states: QUEUED -> SCHEDULED (workers held, launcher told) -> RUNNING
// (the launcher reported mpirun started) -> SUCCEEDED | FAILED | CANCELLED.
// A run finishes only once every result the launcher reported producing is
// stored, so a final state always comes with all of its sizes. The
// lifecycle's own view of a run is its Phase (run_manager_phase.h).
//
// Writes: every change is made in memory under this class's lock and
// appended to the journal (server/core/journal.h), which commits it outside
// the lock; no store call is made while the lock is held (NoIoLock checks
// it). Watchers are told of a change once it is durable: the events are
// published from the journal's report, in commit order. A caller that must
// see its change stored (CreateRun's answer, a cancel) waits for its
// journal write after letting go of the lock.
//
// Durability of results: a result is written before it is acknowledged;
// the launcher keeps unacknowledged results and re-sends them after a
// reconnect; duplicates are ignored by (run, sequence). After a restart,
// Recover() re-queues queued runs and waits `readopt_grace` for the launcher
// of each scheduled or running run to reconnect and claim it.
//
// Admission (docs/design/run-lifecycle.md#admission): CreateRun refuses with
// ResourceExhausted, and a retry-after (server/core/admission.h), when the
// caller's create rate is spent or the queue is at its maximum length; the
// check comes before anything is stored, after a known request_id has
// returned its run.
//
// Worker messages: RunStatus, RunResult and RunLog are applied only when
// they come from the run's launcher (the worker hosting rank 0); others are
// dropped, counted and logged. Results are bounded by what the run's spec
// can produce (api/result_bounds.h).
//
// Time is passed in (absl::Time now) so tests control it; Tick() must be
// called periodically (timeouts, grace periods, hangs).
//
// Thread safety: all public methods may be called concurrently. Lock order
// (docs/design/threading.md#lock-order): this class's mutex, then the
// worker directory's, the progress tracker's, the registry's and the
// journal's; none of those calls back into this class. The watch hub is
// called with none of this class's locks held.
#ifndef COLLBENCH_SERVER_CORE_RUN_MANAGER_H_
#define COLLBENCH_SERVER_CORE_RUN_MANAGER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/references.h"
#include "api/validation.h"
#include "collbench/v1/gateway.pb.h"
#include "collbench/v1/run.pb.h"
#include "common/rate_limiter.h"
#include "server/core/admission.h"
#include "server/core/journal.h"
#include "server/core/launcher_pool.h"
#include "server/core/progress_tracker.h"
#include "server/core/watch_hub.h"
#include "server/core/worker_directory.h"
#include "server/core/worker_link.h"
#include "server/scheduling/scheduler.h"
#include "server/scheduling/worker_registry.h"
#include "server/store/store.h"

namespace collbench {

// The run label that marks a scheduled check's runs (its value: the
// schedule's id). They are queued behind every user run.
inline constexpr char kScheduleLabel[] = "schedule";
bool IsBackgroundRun(const v1::Run& run);

struct RunManagerOptions {
  // The published references results are judged against
  // (analysis/references.h); null: the compiled-in table.
  std::shared_ptr<const ReferenceTable> references;
  // For runs whose spec sets none.
  absl::Duration default_run_timeout = absl::Hours(1);
  // How long a launcher may be away (coordinator restart, network blip)
  // before its run fails.
  absl::Duration readopt_grace = absl::Seconds(20);
  // How long a cancelled run's workers wait for the launcher to confirm
  // that everything was killed before they are freed anyway.
  absl::Duration cancel_grace = absl::Seconds(15);
  // Admission: queued runs beyond which CreateRun is refused (0: no
  // limit), what such a refusal tells the caller to wait, and the create
  // rate per caller (per_second 0: no limit).
  int max_queued_runs = 1000;
  absl::Duration queue_full_retry_after = absl::Seconds(5);
  RateLimit create_rate = {/*per_second=*/10, /*burst=*/20};
  // The trusted launchers (docs/design/security.md#the-launcher): a run
  // spanning workers is started by one of them, never by a worker. Not
  // owned; null: none ever connects.
  const LauncherPool* launchers = nullptr;
  // With no launcher connected, a run spanning workers is launched by its
  // rank-0 worker instead of waiting for one; any worker of such a run can
  // then run code on the others. The coordinator's --worker-launch is off
  // unless told (labs that start no launcher give fallback); the core's
  // own tests place runs without launchers.
  bool worker_launch_fallback = true;
};

class RunManager final : public JournalClient {
 public:
  // None of the pointers is owned; all must outlive the manager.
  RunManager(Store* store, scheduling::WorkerRegistry* registry, WorkerDirectory* workers,
             Journal* journal, WatchHub* hub, WorkerLink* link, RunManagerOptions options);
  ~RunManager() override;

  // Loads unfinished runs from the store after a start. Call once, before
  // serving.
  absl::Status Recover(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // --- Coordinator API -----------------------------------------------------
  // Validates (InvalidArgument naming the field; nothing is queued then),
  // then queues. Returns the run once it is stored, as it is then (already
  // SCHEDULED when workers were free). The same non-empty request_id
  // returns the same run, even past the limits. `caller` keys the
  // create-rate bucket (a token's identity or a peer address; empty:
  // anonymous). Beyond the caller's rate or the queue's length:
  // ResourceExhausted naming the limit, with a retry-after (admission.h),
  // and nothing is stored. The store's error when it cannot record the run.
  absl::StatusOr<v1::Run> CreateRun(const v1::RunSpec& spec, const std::string& request_id,
                                    absl::Time now, absl::string_view caller = "")
      ABSL_LOCKS_EXCLUDED(mu_);
  // One run of a group (CreateRuns).
  struct RunRequest {
    v1::RunSpec spec;
    std::string request_id;
  };
  // A group of runs admitted together (a hunt's round): each request is
  // checked and queued as CreateRun would, but the group spends one token
  // of the caller's create rate and the queue is placed once the group is
  // stored, so runs on disjoint hosts start together and a fleet-wide round
  // costs one placement, not one per run. One answer per request, in order.
  // A refused rate refuses every request; the queue's limit counts the runs
  // that wait once what can start has started, and past it the rest get
  // ResourceExhausted; a bad spec is refused alone.
  std::vector<absl::StatusOr<v1::Run>> CreateRuns(const std::vector<RunRequest>& requests,
                                                  absl::Time now, absl::string_view caller = "")
      ABSL_LOCKS_EXCLUDED(mu_);
  // What CreateRun checks of `spec` before it queues (validation and
  // whether any placement on the registered workers could run it), with no
  // admission and nothing stored.
  absl::Status CheckRun(const v1::RunSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  // As stored, with a queued run's waiting reason and a running run's rank
  // progress added.
  absl::StatusOr<v1::Run> GetRun(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Store::RunPage> ListRuns(int page_size, absl::string_view page_token,
                                          v1::RunState state) ABSL_LOCKS_EXCLUDED(mu_);
  // Queued: cancelled at once. Scheduled/running: marked cancelled, the
  // launcher told to kill everything; the workers are freed when it
  // confirms (or after cancel_grace). Final: FailedPrecondition. Returns the
  // run once the cancel is stored; a queued run whose cancel the store
  // cannot record stays queued, and the store's error is returned.
  absl::StatusOr<v1::Run> CancelRun(absl::string_view name, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::SizeResult>> GetResults(absl::string_view name);
  // Deletes a finished run and its results from the store.
  // FailedPrecondition while it is queued, scheduled or running (cancel it
  // first) or cancelled but not yet confirmed killed by its launcher;
  // NotFound when unknown. Results of it still on their way to the store
  // are written before the delete, and a run that is not live never gets
  // new ones, so no partial row of it outlives the delete.
  absl::Status DeleteRun(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);
  // Of `names` (finished runs, by a retention pass), deletes those not live,
  // with one wait for the journal for all; returns the deleted ones. A
  // store error other than NotFound ends the pass and is returned with
  // what was deleted before it.
  struct Deleted {
    std::vector<std::string> names;
    absl::Status error;
  };
  Deleted DeleteFinishedRuns(const std::vector<std::string>& names) ABSL_LOCKS_EXCLUDED(mu_);
  // OK when no run is queued and no run holds a worker the selector
  // (RunSpec.workers' grammar; empty: any worker) selects; else Unavailable
  // saying which run is in the way. A scheduled check starts only then.
  absl::Status WorkersIdle(absl::string_view selector) ABSL_LOCKS_EXCLUDED(mu_);
  // Queued runs, for metrics.
  int queued_count() ABSL_LOCKS_EXCLUDED(mu_);
  // CreateRun refusals so far, for metrics.
  AdmissionRejections admission_rejections() ABSL_LOCKS_EXCLUDED(mu_);
  // Worker messages refused so far, by reason (WorkerCounts).
  std::map<std::string, int64_t> refused_messages() ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once every change made before the call is stored (or its write
  // failed) and its watchers told.
  void FlushJournal();
  const RunManagerOptions& options() const { return options_; }

  // --- What workers tell about runs (through the Fleet) --------------------
  // `worker` registered (or came back): runs still holding it after a
  // restart hold it again, the runs it lists are re-adopted (or cancelled
  // when the coordinator gave up on them), and the queue is placed.
  void OnWorkerJoined(const std::string& worker, const std::vector<std::string>& active_runs,
                      absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // `worker` is lost (its stream ended as `session`, or it went silent):
  // fails the run it carries ranks of, or starts its launcher's grace.
  // Nothing when a newer session replaced it meanwhile.
  void OnWorkerLost(const std::string& worker, uint64_t session, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A launcher's stream ended or it went silent: the runs it started get
  // readopt_grace for it (or another session of it) to come back and claim
  // them.
  void OnLauncherLost(const std::string& launcher, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  void OnRunStatus(const std::string& worker, const v1::RunStatus& status, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Checks the result and appends it to the journal; it is acknowledged to
  // the worker once stored (a result stored already is acknowledged at
  // once). Taken by value: the gateway moves each message's result in.
  void OnResult(const std::string& worker, v1::RunResult message, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnLog(const std::string& worker, const v1::RunLog& log, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Where the ranks of a run on `worker` are (ProgressTracker): kept for
  // GetRun and sent to the run's watchers.
  void OnRankProgress(const std::string& worker, const v1::RankProgressReport& report,
                      absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Places the queue (after a worker was undrained or cleared).
  void Schedule(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // The live run that holds `worker` ("" when none), also after a restart
  // before the worker is back.
  std::string HolderOf(const std::string& worker) ABSL_LOCKS_EXCLUDED(mu_);

  // Enforces timeouts, grace periods and hang timeouts, and places the
  // queue.
  void Tick(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // JournalClient: runs stored, results stored (published, acknowledged,
  // runs that are complete now finished), state changes published.
  void OnCommitted(std::vector<Committed>& writes) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct LiveRun;
  class Outbox;
  // CreateRuns' part under the lock: admission, checks and the journal
  // writes of the new runs; `answers` gets the refusals, `waits` the
  // journal sequence of each run appended (by request index).
  void AdmitLocked(const std::vector<RunRequest>& requests, const std::vector<size_t>& fresh,
                   absl::Time now, absl::string_view caller,
                   std::vector<absl::StatusOr<v1::Run>>* answers,
                   std::map<size_t, std::pair<std::string, uint64_t>>* waits)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Validation (once: the spec travels on as a ValidatedRunSpec), then
  // whether any placement on `fleet` could run it. InvalidArgument naming
  // the field; OK with no workers registered yet.
  absl::StatusOr<ValidatedRunSpec> CheckLocked(const v1::RunSpec& spec, const FleetView& fleet)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RateLocked(absl::string_view caller, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ResourceExhausted when the queue is full: what waits counts the queue
  // and the runs being created, less those of `group` (this call's new
  // runs) that would start at once.
  absl::Status CheckQueueLengthLocked(const std::vector<std::string>& group)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How many of `group` a placement of the queue now would start.
  size_t StartableLocked(const std::vector<std::string>& group) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The scheduler's input: the fleet, the runs holding workers, and the
  // queue, user runs first; `also` (runs being created) after the queue.
  scheduling::ScheduleInput ScheduleInputLocked(const std::vector<std::string>& also)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The run `existing` made under `request_id` if `spec` is the one it was
  // made with, else AlreadyExists.
  static absl::StatusOr<v1::Run> SameRequest(const v1::Run& existing, const v1::RunSpec& spec,
                                             const std::string& request_id);
  // The run as it is once every change made so far is stored.
  absl::StatusOr<v1::Run> StoredRun(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  void ScheduleLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartLocked(const scheduling::Assignment& assignment, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a run: final state appended, workers released (unless the
  // launcher must still confirm a kill), no longer live.
  uint64_t FinishLocked(LiveRun& live, v1::RunState state, const std::string& error,
                        absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the run's workers and tells them, and its launcher, to drop it.
  // REQUIRES: the run is still in live_.
  void ReleaseWorkersLocked(const std::string& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails or cancels a run that holds workers: tells the launcher to kill
  // it and every peer to drop its token. Returns the journal write of its
  // end (`awaited`: its outcome kept for Await) and, in `*ended` when set,
  // the run as written. `live` may be gone after (no launcher to confirm).
  uint64_t AbortLocked(LiveRun& live, v1::RunState state, const std::string& reason,
                       absl::Time now, bool awaited = false, v1::Run* ended = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishIfCompleteLocked(LiveRun& live, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends the run's row (without its progress: the results own it).
  uint64_t SaveLocked(const LiveRun& live, absl::Time now, bool awaited = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The launcher of a run no longer live re-sends a result: acknowledged
  // once the run is known stored, since it ended with all it got.
  void OnResultOfEndedRun(const std::string& worker, const v1::RunResult& message)
      ABSL_LOCKS_EXCLUDED(mu_);
  // What one transaction's report changed, for OnCommitted to act on once.
  struct Stored {
    std::map<std::pair<std::string, std::string>, int64_t> acks;  // (launcher, run) -> sequence
    std::map<std::string, absl::Time> results_of;  // runs with new results, when
    bool queue_changed = false;
  };
  // OnCommitted's parts.
  void RunStoredLocked(const Committed& committed, Stored& stored, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResultsStoredLocked(Committed& committed, Stored& stored, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  LiveRun* FindLiveLocked(absl::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Who starts a run placed as `a`: a connected launcher when it spans
  // workers (the least busy), its rank-0 worker when it does not (or, with
  // worker_launch_fallback, when no launcher is connected); empty when it
  // must wait for a launcher.
  std::string LauncherForLocked(const scheduling::Assignment& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A QUEUED run's waiting reason, kept in memory by ScheduleLocked.
  void WithWaitingReasonLocked(v1::Run* run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails the run the lost worker carries ranks of (or starts its
  // launcher's grace). Returns true if a run ended.
  bool WorkerLostLocked(const scheduling::WorkerSnapshot& worker, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AdoptLocked(const std::string& worker, const std::string& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts and logs a message refused from `worker` about `run`.
  void RefuseMessageLocked(const std::string& worker, const std::string& run,
                           const char* reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tick's work on one live run.
  void TickRunLocked(LiveRun& live, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  scheduling::WorkerRegistry* const registry_;
  WorkerDirectory* const workers_;
  Journal* const journal_;
  WatchHub* const hub_;
  WorkerLink* const link_;
  const RunManagerOptions options_;
  const scheduling::Scheduler scheduler_;
  ProgressTracker progress_;

  absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // FIFO of run names
  std::map<std::string, std::unique_ptr<LiveRun>, std::less<>> live_ ABSL_GUARDED_BY(mu_);
  size_t creating_ ABSL_GUARDED_BY(mu_) = 0;  // live runs in Phase::kCreating
  RateLimiter create_limiter_ ABSL_GUARDED_BY(mu_);
  // The first run a worker launched for want of a launcher was logged.
  bool warned_worker_launch_ ABSL_GUARDED_BY(mu_) = false;
  AdmissionRejections rejections_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> refused_messages_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_RUN_MANAGER_H_

// SPDX-License-Identifier: Apache-2.0
// The run lifecycle (docs/design/run-lifecycle.md): validation, the FIFO queue, scheduling
// onto workers, launch, results, completion, cancel, timeouts, lost
// workers, and recovery after a coordinator restart. The gRPC and REST
// services are thin translations onto this class; tests drive it directly
// with an in-memory store and a fake WorkerLink.
//
// Run states: QUEUED -> SCHEDULED (workers held, launcher told) -> RUNNING
// (the launcher reported mpirun started) -> SUCCEEDED | FAILED | CANCELLED.
// A run finishes only once every result the launcher reported producing is
// stored, so a final state always comes with all of its sizes.
//
// Durability: a result is written to the store before it is acknowledged;
// the launcher keeps unacknowledged results and re-sends them after a
// reconnect; duplicates are ignored by (run, sequence). Results are written
// by a ResultWriter (group commit: many results and their runs' progress
// per transaction) on its own thread, which holds no lock of this class
// while it waits on the disk; once a batch is durable it takes the lock,
// publishes the results and acknowledges them. A run's progress in the
// store is counted by those transactions (Store::AddResults); the run's
// other fields are saved with UpdateRunExceptProgress, so neither write
// undoes the other. After a restart,
// Recover() re-queues queued runs and waits `readopt_grace` for the launcher
// of each scheduled or running run to reconnect and claim it.
//
// Admission (docs/design/run-lifecycle.md#admission): CreateRun refuses with
// ResourceExhausted, and a retry-after (server/core/admission.h), when the
// caller's create rate is spent or the queue is at its maximum length; the
// check comes before anything is stored, after a known request_id has returned
// its run.
//
// Losing workers at scale: a worker whose stream ends is LOST in the
// registry at once, without this class's lock; the run it holds fails
// under the lock right after. Worker rows in the store are informational
// (what a restarted coordinator lists as LOST until workers come back), so
// they are written in one transaction per Tick rather than one fsync per
// worker: a fleet that disconnects at once costs one store write.
//
// Worker identity (docs/design/security.md#worker-identity): the join token admits only a name this
// coordinator does not know yet; such a first registration is issued a
// random secret (Registered.worker_secret) whose hash is kept in the store
// before the reply goes out. A known name, connected or not, is admitted
// only with its own secret (the join token is still required too), so a
// holder of the join token cannot take over a worker, and a worker comes
// back across coordinator restarts. New names are capped in total
// (max_workers) and per source address (register_rate); refusals are
// ResourceExhausted and, like every registration, counted (WorkerCounts).
// A worker that lost its secret joins anew once an operator forgets its
// name: ForgetWorker() (collbench-coordinator --forget-worker NAME applies
// it at start), refused while the worker is connected or holds a run. A
// name whose secret was stored but whose Registered reply never reached
// the worker (the stream broke in between) needs the same.
//
// Worker messages: RunStatus, RunResult and RunLog are applied only when
// they come from the run's launcher (the worker hosting rank 0, recorded as
// Run.launcher); others are dropped, counted and logged. Results are
// bounded by what the run's spec can produce (api/result_bounds.h).
//
// Time is passed in (absl::Time now) so tests control it; Tick() must be
// called periodically (heartbeat expiry, timeouts, grace periods, worker
// rows).
//
// Inventories: a worker's inventory is kept as it came in its Register
// (parsed once, by gRPC), shared read-only with every CreateRun, schedule
// and worker listing that needs it.
//
// Thread safety: all public methods may be called concurrently; one mutex
// guards the live state. Store, registry, hub and link calls are made with
// it held, except OnDisconnect's registry call, the batched worker rows
// (written under flush_mu_ alone) and the result writer's transactions;
// none of them calls back into the manager.
#ifndef COLLBENCH_SERVER_CORE_RUN_MANAGER_H_
#define COLLBENCH_SERVER_CORE_RUN_MANAGER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
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
#include "collbench/v1/worker.pb.h"
#include "server/auth/authorizer.h"
#include "server/core/admission.h"
#include "common/rate_limiter.h"
#include "server/core/result_writer.h"
#include "server/core/retention.h"
#include "server/core/watch_hub.h"
#include "server/core/worker_link.h"
#include "server/scheduling/scheduler.h"
#include "server/scheduling/worker_registry.h"
#include "server/store/store.h"

namespace collbench {

// The run label that marks a scheduled check's runs (its value: the
// schedule's id). They are queued behind every user run.
inline constexpr char kScheduleLabel[] = "schedule";

// Every rank's place, for people (run_manager_progress.cc): "rank 5 on
// node-7 in allreduce 1M iteration 412/1000, stopped; ...".
std::string RankPositions(const std::map<int, v1::RankProgress>& ranks);
bool IsBackgroundRun(const v1::Run& run);

struct RunManagerOptions {
  // The published references results are judged against
  // (analysis/references.h); null: the compiled-in table. The coordinator's
  // --references FILE adds a site's own entries to it.
  std::shared_ptr<const ReferenceTable> references;
  // A worker that sent nothing for this long is lost.
  absl::Duration heartbeat_timeout = absl::Seconds(6);
  // What workers are told to use.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // For runs whose spec sets none.
  absl::Duration default_run_timeout = absl::Hours(1);
  // How long a launcher may be away (coordinator restart, network blip)
  // before its run fails.
  absl::Duration readopt_grace = absl::Seconds(20);
  // How long a cancelled run's workers wait for the launcher to confirm
  // that everything was killed before they are freed anyway.
  absl::Duration cancel_grace = absl::Seconds(15);
  // Limits for validation; worker-derived limits are filled in per request.
  ValidationLimits limits;
  // Worker join tokens (Role::kWorker); with none, workers need no token.
  Authorizer tokens;
  // Admission: queued runs beyond which CreateRun is refused (0: no
  // limit), what such a refusal tells the caller to wait, and the create
  // rate per caller (per_second 0: no limit).
  int max_queued_runs = 1000;
  absl::Duration queue_full_retry_after = absl::Seconds(5);
  RateLimit create_rate = {/*per_second=*/10, /*burst=*/20};
  // Worker names known (each with a secret) beyond which a new name is
  // refused (0: no limit), and the new names each source address (the
  // peer's IP) may register (per_second 0: no limit).
  int max_workers = 10000;
  RateLimit register_rate = {/*per_second=*/20, /*burst=*/200};
  // Batching of result writes (group commit).
  ResultWriterOptions result_writer;
  // Worker streams of one source address that have not registered yet,
  // beyond which the gateway refuses a new one (0: no limit).
  int max_unregistered_streams_per_source = 32;
  // Which finished runs ApplyRetention() deletes (none by default).
  RetentionPolicy retention;
};

// What workers sent that the manager counted, for metrics: registrations
// by result ("new", "reconnected", "refused_join_token", "refused_secret",
// "refused_invalid", "refused_max_workers", "refused_rate",
// "refused_concurrent") and messages
// refused by reason ("status_not_launcher", "result_not_launcher",
// "log_not_launcher", "results_beyond_spec").
struct WorkerCounts {
  std::map<std::string, int64_t> registrations;
  std::map<std::string, int64_t> refused_messages;
};

class RunManager {
 public:
  // None of the pointers is owned; all must outlive the manager.
  RunManager(Store* store, scheduling::WorkerRegistry* registry, WatchHub* hub,
             WorkerLink* link, RunManagerOptions options);
  // Writes the results received and the worker rows not yet stored.
  ~RunManager();

  // Loads unfinished runs from the store after a start. Call once, before
  // serving.
  absl::Status Recover(absl::Time now);

  // --- Coordinator API -----------------------------------------------------
  // Validates (InvalidArgument naming the field; nothing is queued then),
  // then queues. The same non-empty request_id returns the same run, even
  // past the limits. `caller` keys the create-rate bucket (a token's
  // identity or a peer address; empty: anonymous). Beyond the caller's
  // rate or the queue's length: ResourceExhausted naming the limit, with a
  // retry-after (admission.h), and nothing is stored.
  absl::StatusOr<v1::Run> CreateRun(const v1::RunSpec& spec, const std::string& request_id,
                                    absl::Time now, absl::string_view caller = "");
  // One run of a group (CreateRuns).
  struct RunRequest {
    v1::RunSpec spec;
    std::string request_id;
  };
  // A group of runs admitted together (a hunt's round, docs/design/workflows.md#hunts): each
  // request is checked and queued as CreateRun would, but the group spends
  // one token of the caller's create rate and the queue is placed once,
  // after the last is queued, so runs on disjoint hosts start together and
  // a fleet-wide round costs one placement, not one per run. One answer per
  // request, in order. A refused rate refuses every request; the queue's
  // limit counts the runs that wait once what can start has started, and
  // past it the rest get ResourceExhausted (those before are queued); a bad
  // spec is refused alone.
  std::vector<absl::StatusOr<v1::Run>> CreateRuns(const std::vector<RunRequest>& requests,
                                                  absl::Time now, absl::string_view caller = "");
  // What CreateRun checks of `spec` before it queues (validation and
  // whether any placement on the registered workers could run it), with no
  // admission and nothing stored: a workflow checks every run it will make
  // before it makes the first.
  absl::Status CheckRun(const v1::RunSpec& spec);
  absl::StatusOr<v1::Run> GetRun(absl::string_view name);
  absl::StatusOr<Store::RunPage> ListRuns(int page_size, absl::string_view page_token,
                                          v1::RunState state);
  // Queued: cancelled at once. Scheduled/running: marked cancelled, the
  // launcher told to kill everything; the workers are freed when it
  // confirms (or after cancel_grace). Final: FailedPrecondition.
  absl::StatusOr<v1::Run> CancelRun(absl::string_view name, absl::Time now);
  absl::StatusOr<std::vector<v1::SizeResult>> GetResults(absl::string_view name);
  std::vector<v1::Worker> ListWorkers();
  // Workers [start, start + count) of ListWorkers()' order, and how many
  // there are in all; only that range is converted, so a page of a large
  // fleet costs little more than its own workers.
  struct WorkerPage {
    std::vector<v1::Worker> workers;
    size_t total = 0;
  };
  WorkerPage ListWorkers(size_t start, size_t count);
  absl::StatusOr<v1::Worker> GetWorker(absl::string_view name);
  // --- Worker and run lifecycle (run_manager_lifecycle.cc) -----------------
  // Drain: the worker finishes what it holds and is given no new run until
  // UndrainWorker. It is the operator's decision about the worker, so it
  // outlives the worker's reconnects and restarts and, kept in its store
  // row, coordinator restarts; Worker.draining shows it in every state.
  // Both work on a worker known only from before a restart too, and are
  // idempotent. NotFound for an unknown worker. Undrain schedules at once.
  absl::StatusOr<v1::Worker> DrainWorker(absl::string_view name);
  absl::StatusOr<v1::Worker> UndrainWorker(absl::string_view name, absl::Time now);
  // Quarantine (docs/design/workflows.md#hunts): a hunt marks a worker it confirmed
  // bad SUSPECT, with why; it then gets only runs that name it. Cleared by
  // an operator (ClearWorker: FailedPrecondition when it is not SUSPECT) or
  // by a later hunt that measures it healthy. Kept in the worker's row, so
  // it survives worker and coordinator restarts. NotFound for an unknown
  // name.
  absl::StatusOr<v1::Worker> SuspectWorker(absl::string_view name,
                                           const v1::WorkerSuspicion& why);
  absl::StatusOr<v1::Worker> ClearWorker(absl::string_view name, absl::string_view by,
                                         absl::Time now);
  // Deletes a finished run and its results from the store.
  // FailedPrecondition while it is queued, scheduled or running (cancel it
  // first) or cancelled but not yet confirmed killed by its launcher;
  // NotFound when unknown. Results of it still queued for the writer are
  // written before the delete, and a run that is not live never gets new
  // ones, so no partial row of it outlives the delete.
  absl::Status DeleteRun(absl::string_view name);
  // Deletes the finished runs options().retention does not keep (never one
  // that is live), oldest first and at most 1000 per call, and
  // returns their names; logs what it deleted. A store error is logged and
  // ends the pass (the next one tries again).
  std::vector<std::string> ApplyRetention(absl::Time now);
  const RunManagerOptions& options() const { return options_; }
  // Queued runs, for metrics.
  int queued_count();
  // OK when no run is queued and no run holds a worker the selector
  // (RunSpec.workers' grammar; empty: any worker) selects; else
  // Unavailable saying which run is in the way. A scheduled check starts
  // only then (docs/design/workflows.md#schedules: it never delays a user's run).
  absl::Status WorkersIdle(absl::string_view selector);
  // CreateRun refusals so far, for metrics.
  AdmissionRejections admission_rejections();

  // --- Worker gateway ------------------------------------------------------
  // A worker (re)connected from `peer` (gRPC's peer string, e.g.
  // "ipv4:10.0.0.5:41234"; the rate of new names is kept per address,
  // port ignored). Returns the Registered reply (with a new name's secret)
  // and the session id that later calls from this stream carry. Re-adopts
  // the runs it lists. PermissionDenied for a wrong join token or a known
  // name without its secret (nothing about the stored secret is said);
  // InvalidArgument naming the field (worker_id, agent_address, labels);
  // ResourceExhausted beyond max_workers or register_rate; a refused
  // registration changes nothing.
  struct Registration {
    uint64_t session = 0;
    v1::Registered reply;
  };
  absl::StatusOr<Registration> OnRegister(const v1::Register& hello, absl::Time now,
                                          absl::string_view peer = "");
  // Forgets a worker name and its secret, so that it can register anew
  // with the join token (an operator's way back for a worker that lost its
  // secret file, and the API's DeleteWorker for a worker that is gone).
  // FailedPrecondition while it is connected (drain and stop it first) or
  // a run holds it; NotFound when the name is unknown. Runs keep naming it.
  absl::Status ForgetWorker(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_, flush_mu_);
  WorkerCounts worker_counts();
  // Counts a registration refused before it reached OnRegister (the
  // gateway's cap on streams not yet registered: "refused_concurrent").
  void CountRegistration(absl::string_view result);
  void OnHeartbeat(const std::string& worker, uint64_t session, absl::Time now);
  void OnDisconnect(const std::string& worker, uint64_t session, absl::Time now);
  void OnRunStatus(const std::string& worker, const v1::RunStatus& status, absl::Time now);
  // Checks the result and queues it for the writer; it is acknowledged to
  // the worker once stored (a result stored already is acknowledged at
  // once).
  void OnResult(const std::string& worker, const v1::RunResult& result, absl::Time now);
  // Returns once every result received before the call is stored (or its
  // write failed) and acknowledged.
  void FlushResults();
  ResultWriter::Stats result_writer_stats();
  void OnLog(const std::string& worker, const v1::RunLog& log, absl::Time now);
  // Hang attribution (docs/design/run-lifecycle.md#hang-attribution;
  // run_manager_progress.cc): where the ranks of a run on `worker` are. Kept on
  // the run (Run.rank_progress), sent to its watchers; a run in which no rank
  // advances for its hang timeout is ended by Tick with a diagnosis naming the
  // ranks behind.
  void OnRankProgress(const std::string& worker, const v1::RankProgressReport& report,
                      absl::Time now);

  // Expires heartbeats, enforces timeouts and grace periods, schedules,
  // and writes changed worker rows to the store in one transaction.
  void Tick(absl::Time now);

 private:
  // A run that is queued or holds workers.
  struct LiveRun {
    v1::Run run;
    std::string token;
    absl::Time deadline = absl::InfiniteFuture();  // run timeout
    int64_t results_total = -1;       // known once the launcher reports a final state
    v1::RunState final_state = v1::RUN_STATE_UNSPECIFIED;  // reported, awaiting results
    std::string final_error;
    int64_t stored_through = -1;      // results 0..stored_through are stored
    std::set<int64_t> stored_ahead;   // stored past a gap (arrived out of order)
    absl::Time launcher_away_since = absl::InfiniteFuture();
    bool cancelling = false;          // marked cancelled, workers still held
    absl::Time cancel_deadline = absl::InfiniteFuture();
    int64_t max_results = -1;         // from the spec, computed on first use
    // What a result's references are computed from (its workers' memory
    // bandwidth, links and class), on first use.
    std::optional<PathFacts> path;
    RunClass run_class;
    // Where each rank is (OnRankProgress), and when one last moved.
    std::map<int, v1::RankProgress> ranks;
    absl::Time last_advance = absl::InfinitePast();
    // Each rank's CPU time when it last moved: a rank that used none since
    // while the run stands still is not waiting in a busy loop.
    std::map<int, double> cpu_at_advance;
  };

  // A run standing still past its hang timeout: ended with the diagnosis.
  void CheckHangLocked(LiveRun& live, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ValidationLimits LimitsNow() const;
  void ScheduleLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartLocked(const scheduling::Assignment& assignment, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a run: final state in the store, watchers told, workers released
  // (unless the launcher must still confirm a kill).
  void FinishLocked(LiveRun& live, v1::RunState state, const std::string& error, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseWorkersLocked(const std::string& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails or cancels a run that holds workers: tells the launcher to kill
  // it and every peer to drop its token. Returns whether the store recorded
  // the end (the run is stopped either way).
  absl::Status AbortLocked(LiveRun& live, v1::RunState state, const std::string& reason,
                           absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishIfCompleteLocked(LiveRun& live, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The writer's report of one transaction: publishes what was new,
  // acknowledges what is stored, finishes runs that are complete now.
  void OnResultsStored(const ResultWriter::Batch& batch,
                       const absl::StatusOr<std::vector<bool>>& inserted) ABSL_LOCKS_EXCLUDED(mu_);
  // A new result of a live run is stored: progress and watchers.
  void PublishResultLocked(LiveRun& live, const v1::SizeResult& result, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A result of a run that is no longer live: acknowledged (only to the
  // run's launcher) when the run is stored, since it ended with all it got.
  void OnResultOfEndedRunLocked(const std::string& worker, const v1::RunResult& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendAckLocked(const std::string& worker, const std::string& run, int64_t sequence)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The worker's inventory as registered (empty when it never did).
  std::shared_ptr<const v1::Inventory> InventoryOf(const std::string& worker) const
      ABSL_LOCKS_EXCLUDED(inventories_mu_);
  // Fails the run the lost worker carries ranks of (or starts its
  // launcher's grace). Returns true if a run ended.
  bool WorkerLostLocked(const scheduling::WorkerSnapshot& worker, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the worker's row for the next FlushWorkerRows().
  void SaveWorkerLocked(v1::Worker worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushWorkerRows() ABSL_LOCKS_EXCLUDED(mu_, flush_mu_);
  // Tick's work on the live state (everything but the worker rows).
  void TickLiveState(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Admission checks of CreateRun (see there).
  // InvalidArgument naming the field when no placement on the registered
  // workers (lost and draining ones included: they may come back) could
  // ever run `spec`: a named worker that is not registered, a backend, MPI
  // implementation or memory kind no worker offers, more ranks than the
  // workers that offer them have slots. OK with no workers registered yet.
  // What a spec is checked against: the registered workers and the limits
  // they set, taken once for a group of runs (a fleet-wide round would
  // otherwise walk the fleet twice per run).
  struct FleetView {
    std::vector<scheduling::WorkerInfo> workers;  // the registry's SchedulerWorkers()
    ValidationLimits limits;                      // LimitsNow()
  };
  FleetView FleetNow() const;
  absl::Status CheckFleetCanRunLocked(const v1::RunSpec& spec, const FleetView& fleet)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Validation, then CheckFleetCanRunLocked: what CreateRun and CheckRun
  // both refuse.
  absl::Status CheckRunLocked(const v1::RunSpec& spec, const FleetView& fleet)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CreateRun's part after admission: checks `spec` and the queue's length,
  // stores the run QUEUED and queues it (not yet placed: ScheduleLocked).
  // Returns its name.
  absl::StatusOr<std::string> QueueRunLocked(const v1::RunSpec& spec,
                                             const std::string& request_id,
                                             const FleetView& fleet, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A run ended: GetRun no longer adds live rank progress to it.
  void DropRankProgress(const std::string& run) ABSL_LOCKS_EXCLUDED(rank_progress_mu_);
  // The run `name` as stored, with its waiting reason.
  absl::StatusOr<v1::Run> CreatedRunLocked(const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A QUEUED run's waiting reason, kept in memory by ScheduleLocked.
  void WithWaitingReasonLocked(v1::Run* run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The run `existing` made under `request_id` if `spec` is the one it was
  // made with, else AlreadyExists.
  absl::StatusOr<v1::Run> SameRequestLocked(const v1::Run& existing, const v1::RunSpec& spec,
                                            const std::string& request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AdmitLocked(absl::string_view caller, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckQueueLengthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the run's row; a failure is logged and returned (the live state
  // stays the truth until a later save).
  absl::Status SaveLocked(LiveRun& live) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishStateLocked(const LiveRun& live, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  LiveRun* FindLiveLocked(absl::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AdoptLocked(const std::string& worker, const std::string& run, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Worker WorkerProto(const scheduling::WorkerSnapshot& snapshot) const;
  // Drain or undrain: in the registry and in the worker's row, or in the
  // row alone for a worker known only from before a restart. Returns the
  // worker as listed; NotFound when unknown.
  // The quarantine on (`why` set) or off (null), in the registry and the
  // worker's row.
  absl::StatusOr<v1::Worker> SetSuspectLocked(absl::string_view name,
                                              const v1::WorkerSuspicion* why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<v1::Worker> SetDrainingLocked(absl::string_view name, bool draining)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FailedPrecondition naming why a live run may not be deleted yet.
  static absl::Status NotDeletable(const LiveRun& live);
  // The identity and admission part of OnRegister: the secret check for a
  // known name, or the caps and a new secret (stored) for a new one.
  absl::Status AdmitWorkerLocked(const std::string& name, const v1::Register& hello,
                                 absl::string_view peer, absl::Time now, v1::Registered* reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts and logs a message refused from `worker` about `run`.
  void RefuseMessageLocked(const std::string& worker, const std::string& run,
                           const char* reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  scheduling::WorkerRegistry* const registry_;
  WatchHub* const hub_;
  WorkerLink* const link_;
  const RunManagerOptions options_;
  const scheduling::Scheduler scheduler_;

  // Orders worker-row flushes; taken before mu_, never while holding it.
  absl::Mutex flush_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // FIFO of run names
  // Worker rows not yet in the store: the latest state of each.
  std::map<std::string, v1::Worker> unsaved_workers_ ABSL_GUARDED_BY(mu_);
  RateLimiter create_limiter_ ABSL_GUARDED_BY(mu_);
  AdmissionRejections rejections_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LiveRun, std::less<>> live_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  // Workers in the store when Recover() ran, as LOST: ListWorkers shows
  // them until they register again, without reading the store per call.
  std::map<std::string, v1::Worker> known_before_start_ ABSL_GUARDED_BY(mu_);
  // Worker name -> hash of its secret (store's worker_credentials).
  std::map<std::string, std::string> secret_hashes_ ABSL_GUARDED_BY(mu_);
  RateLimiter register_limiter_ ABSL_GUARDED_BY(mu_);
  WorkerCounts worker_counts_ ABSL_GUARDED_BY(mu_);
  // Worker name -> its inventory as registered. A leaf lock: worker
  // listings read it without mu_.
  // Each running run's rank progress as GetRun shows it (a copy of the
  // live run's, read without mu_).
  mutable absl::Mutex rank_progress_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<std::string, google::protobuf::RepeatedPtrField<v1::RankProgress>> rank_progress_
      ABSL_GUARDED_BY(rank_progress_mu_);
  // Why each SUSPECT worker is (WorkerProto reads it without mu_).
  mutable absl::Mutex suspicions_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<std::string, v1::WorkerSuspicion> suspicions_ ABSL_GUARDED_BY(suspicions_mu_);
  mutable absl::Mutex inventories_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<std::string, std::shared_ptr<const v1::Inventory>, std::less<>> inventories_
      ABSL_GUARDED_BY(inventories_mu_);
  // Last: stopped (its queue written) before anything above goes.
  std::unique_ptr<ResultWriter> writer_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_RUN_MANAGER_H_

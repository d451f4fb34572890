// SPDX-License-Identifier: Apache-2.0
// Who the workers are (docs/design/run-lifecycle.md#workers): their
// identity (docs/design/security.md#worker-identity), what each reported
// when it registered (its inventory, parsed once and shared read-only),
// the operator's decisions about them (drain, quarantine, forgetting a
// name), their rows in the store, and the limits the registered fleet sets
// on a run spec. The live table the scheduler reads (sessions, heartbeats,
// holds) is the WorkerRegistry; this class admits workers to it.
//
// Identity: the join token admits only a name not known yet; such a first
// registration is issued a random secret whose hash is durable in the
// store before the reply goes out. A known name, connected or not, is
// admitted only with its own secret (the join token is still required
// too), so a holder of the join token cannot take over a worker, and a
// worker comes back across coordinator restarts. New names are capped in
// total (max_workers) and per source address (register_rate); refusals are
// ResourceExhausted and, like every registration, counted. A worker that
// lost its secret joins anew once an operator forgets its name.
//
// Rows: a worker's row in the store is informational (what a restarted
// coordinator lists as LOST until the worker is back); changed rows are
// kept here and written together by FlushRows(), one transaction per tick
// however many workers changed.
//
// Thread safety: every method may be called from any thread. One mutex,
// taken as a NoIoLock: no store call and no wait for the journal is made
// under it. Lock order: the run lifecycle's mutex, then this one, then the
// registry's and the journal's (leaves).
#ifndef COLLBENCH_SERVER_CORE_WORKER_DIRECTORY_H_
#define COLLBENCH_SERVER_CORE_WORKER_DIRECTORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/validation.h"
#include "collbench/v1/gateway.pb.h"
#include "collbench/v1/worker.pb.h"
#include "common/rate_limiter.h"
#include "server/auth/authorizer.h"
#include "server/core/journal.h"
#include "server/scheduling/scheduler.h"
#include "server/scheduling/worker_registry.h"
#include "server/store/store.h"

namespace collbench {

// A worker's (or a launcher's) id becomes "workers/{id}", a folder name on
// workers and a word in logs: 1 to 128 letters, digits, '.', '_', '-', not
// starting with '.' or '-'. InvalidArgument naming register.worker_id.
absl::Status ValidateWorkerId(absl::string_view id);

struct WorkerDirectoryOptions {
  // Worker join tokens (Role::kWorker); with none, workers need no token.
  Authorizer tokens;
  // What workers are told to use (Registered.heartbeat_interval_ms).
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // Worker names known (each with a secret) beyond which a new name is
  // refused (0: no limit), and the new names each source address (the
  // peer's IP) may register (per_second 0: no limit).
  int max_workers = 10000;
  // A name gone (LOST, or known only from before a restart) for longer
  // than this is forgotten by the fleet's sweep (Fleet::ForgetGoneWorkers),
  // so --max-workers counts only names heard from within it; zero: never.
  absl::Duration forget_after = absl::Hours(24 * 30);
  RateLimit register_rate = {/*per_second=*/20, /*burst=*/200};
  // Limits for validation; the registered workers' are filled in
  // (FleetNow).
  ValidationLimits limits;
};

// What workers sent that was counted, for metrics: registrations by result
// ("new", "reconnected", "refused_join_token", "refused_secret",
// "refused_invalid", "refused_max_workers", "refused_rate",
// "refused_store", "refused_busy" (the name is being registered or
// forgotten by another call), "refused_concurrent") and messages refused by
// reason
// ("status_not_launcher", "result_not_launcher", "log_not_launcher",
// "results_beyond_spec", "progress_not_a_worker_of_the_run").
struct WorkerCounts {
  std::map<std::string, int64_t> registrations;
  std::map<std::string, int64_t> refused_messages;
};

// What a spec is checked against: the registered workers and the limits
// they set, taken once for a group of runs.
struct FleetView {
  std::vector<scheduling::WorkerInfo> workers;  // the registry's SchedulerWorkers()
  ValidationLimits limits;
};

class WorkerDirectory final : public JournalClient {
 public:
  // None of the pointers is owned; all must outlive the directory.
  WorkerDirectory(Store* store, scheduling::WorkerRegistry* registry, Journal* journal,
                  WorkerDirectoryOptions options);

  // Loads the secrets and rows stored before a start: those workers are
  // listed as LOST until they register again. Call once, before serving.
  absl::Status Recover();

  // A worker (re)connected from `peer` (gRPC's peer string, e.g.
  // "ipv4:10.0.0.5:41234"; the rate of new names is kept per address,
  // port ignored). Returns the Registered reply (with a new name's secret)
  // and the session id later calls from this stream carry.
  // PermissionDenied for a wrong join token or a known name without its
  // secret (nothing about the stored secret is said); InvalidArgument naming
  // the field (worker_id, agent_address, labels); ResourceExhausted beyond
  // max_workers or register_rate; Unavailable when the store cannot record
  // a new name's secret. A refused registration changes nothing.
  struct Registration {
    std::string name;  // "workers/{id}"
    uint64_t session = 0;
    v1::Registered reply;
  };
  // `done` is called once with the outcome: before RegisterAsync returns
  // for a refusal or a known name, or, for a new name, on the journal
  // thread once its credential is durable (no thread waits for the disk
  // meanwhile). It is called with no lock of the directory's held; on the
  // journal thread it may take the core's locks and Append, but must not
  // Await (server/core/journal.h).
  using RegisterDone = absl::AnyInvocable<void(absl::StatusOr<Registration>) &&>;
  void RegisterAsync(const v1::Register& hello, absl::Time now, absl::string_view peer,
                     RegisterDone done) ABSL_LOCKS_EXCLUDED(mu_);
  // Counts a registration refused before it reached Register (the
  // gateway's cap on streams not yet registered: "refused_concurrent").
  void CountRegistration(absl::string_view result) ABSL_LOCKS_EXCLUDED(mu_);

  void Heartbeat(const std::string& worker, uint64_t session, absl::Time now);
  // The stream of `session` ended: the worker is LOST at once (its row
  // saved) unless a newer session replaced it. True when it became lost.
  bool Disconnect(const std::string& worker, uint64_t session) ABSL_LOCKS_EXCLUDED(mu_);
  // Marks LOST the workers silent for `timeout` and returns them.
  std::vector<scheduling::WorkerSnapshot> ExpireStale(absl::Time now, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Drain: the worker finishes what it holds and is given no new run until
  // Undrain. It outlives the worker's reconnects and restarts and, kept in
  // its row, coordinator restarts. Both work on a worker known only from
  // before a restart too, and are idempotent. NotFound for an unknown name.
  absl::StatusOr<v1::Worker> Drain(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Worker> Undrain(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);
  // Quarantine (docs/design/workflows.md#hunts): a hunt marks a worker it
  // confirmed bad SUSPECT, with why; it then gets only runs that name it.
  // Clear: FailedPrecondition when it is not SUSPECT. Kept in the row.
  // NotFound for an unknown name.
  absl::StatusOr<v1::Worker> Suspect(absl::string_view name, const v1::WorkerSuspicion& why)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Worker> Clear(absl::string_view name, absl::string_view by)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets a worker name, its secret and its row, so that it can register
  // anew with the join token. FailedPrecondition while it is connected
  // (drain and stop it first), held by a run (the registry's, or
  // `held_by`: a run the caller knows holds it after a restart) or
  // registering; NotFound when the name is unknown. Nothing changes when
  // the store cannot forget it.
  absl::Status Forget(absl::string_view name, absl::string_view held_by = "")
      ABSL_LOCKS_EXCLUDED(mu_);

  // Names gone (LOST, or known only from before a restart, and not being
  // registered) whose last contact was before `cutoff`, by name.
  std::vector<std::string> GoneSince(absl::Time cutoff) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration forget_after() const { return options_.forget_after; }

  // Every worker by name: the registered ones, then those known only from
  // before a restart (LOST). [start, start + count) of that order, and how
  // many there are in all; only the page is converted.
  struct Page {
    std::vector<v1::Worker> workers;
    size_t total = 0;
  };
  Page List(size_t start, size_t count) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<v1::Worker> List() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Worker> Get(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

  // The worker's inventory as registered (an empty one when it never did).
  std::shared_ptr<const v1::Inventory> InventoryOf(const std::string& worker) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The registered workers and the limits they set on a spec.
  FleetView FleetNow() const ABSL_LOCKS_EXCLUDED(mu_);

  // Writes the rows changed since the last call, in one journal write.
  void FlushRows() ABSL_LOCKS_EXCLUDED(mu_);
  // Registrations so far, by result.
  std::map<std::string, int64_t> registrations() ABSL_LOCKS_EXCLUDED(mu_);

  // JournalClient: rows that could not be written are kept for the next
  // flush, unless a newer state replaced them.
  void OnCommitted(std::vector<Committed>& writes) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Worker rows the store refused, kept for the next flush.
  void SaveFailedRowsLocked(std::vector<Committed>& writes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A new name's registration waiting for its credential to be durable.
  struct PendingRegistration {
    v1::Register hello;
    scheduling::WorkerRegistration registration;
    std::string peer;
    absl::Time now;
    Registration result;
    RegisterDone done;
  };
  // The identity part of Register: the secret check for a known name, or
  // the caps and a new secret for a new one (its hash kept here at once,
  // durable before the reply: *new_name is set, and the journal write is
  // queued, reported to OnCommitted). Sets the registration's admit time,
  // the name's first admission (the new secret's issue time).
  absl::Status AdmitLocked(PendingRegistration& pending, bool* new_name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rest of a registration once its name is admitted (and, for a new
  // name, its credential is durable or failed: `stored`).
  absl::StatusOr<Registration> CompleteLocked(PendingRegistration& pending, bool new_name,
                                              const absl::Status& stored)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a refused registration and logs it (at powers of two per result,
  // so a stranger hammering the port cannot flood the log).
  absl::Status RefuseLocked(const char* result, absl::string_view who, absl::string_view peer,
                            absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the secret: into the registry, the inventory kept, a decision
  // from before a restart applied again, the row saved.
  absl::StatusOr<uint64_t> JoinLocked(const v1::Register& hello,
                                      const scheduling::WorkerRegistration& registration,
                                      absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Worker WorkerProtoLocked(const scheduling::WorkerSnapshot& snapshot) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const v1::Inventory> InventoryOfLocked(const std::string& worker) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A lost worker's row saved and the loss logged.
  void LostLocked(const scheduling::WorkerSnapshot& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the worker's row for the next FlushRows().
  void SaveRowLocked(v1::Worker worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<v1::Worker> SetDrainingLocked(absl::string_view name, bool draining)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The quarantine on (`why` set) or off (null), in the registry and the row.
  absl::StatusOr<v1::Worker> SetSuspectLocked(absl::string_view name,
                                              const v1::WorkerSuspicion* why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FailedPrecondition naming why `full` may not be forgotten now.
  absl::Status CheckForgettableLocked(const std::string& full, absl::string_view held_by)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  scheduling::WorkerRegistry* const registry_;
  Journal* const journal_;
  const WorkerDirectoryOptions options_;

  mutable absl::Mutex mu_;
  // Worker name -> its secret's hash and issue time (the store's
  // worker_credentials).
  std::map<std::string, Store::WorkerCredential> credentials_ ABSL_GUARDED_BY(mu_);
  // Names whose first registration waits for its secret to be durable,
  // and names being forgotten: neither may do the other meanwhile.
  std::map<std::string, PendingRegistration> registering_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> forgetting_ ABSL_GUARDED_BY(mu_);
  // Worker name -> its inventory as registered.
  std::map<std::string, std::shared_ptr<const v1::Inventory>, std::less<>> inventories_
      ABSL_GUARDED_BY(mu_);
  // Why each SUSPECT worker is.
  std::map<std::string, v1::WorkerSuspicion> suspicions_ ABSL_GUARDED_BY(mu_);
  // Workers in the store at Recover() that have not registered since, as
  // LOST: listed without reading the store per call.
  std::map<std::string, v1::Worker> known_before_start_ ABSL_GUARDED_BY(mu_);
  // Rows not yet handed to the journal: the latest state of each.
  std::map<std::string, v1::Worker> unsaved_rows_ ABSL_GUARDED_BY(mu_);
  RateLimiter register_limiter_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> registrations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_WORKER_DIRECTORY_H_

// SPDX-License-Identifier: Apache-2.0
// The coordinator's live table of workers
// (docs/design/run-lifecycle.md#workers): who is registered, when each last
// heartbeated, which run holds it, and which are draining or lost. It feeds the
// Scheduler (SchedulerWorkers(), ActiveRuns()) and records the Scheduler's
// decisions (Hold(), Release()).
//
// States, derived in this order:
//   LOST      stopped heartbeating (ExpireStale), its stream ended
//             (Disconnect) or MarkLost; it keeps any run it holds until the
//             coordinator releases it.
//   DRAINING  Drain() was called: it finishes what it holds and is given
//             nothing new. Draining survives reconnects; Undrain() ends it.
//   BUSY      held by a run (Hold).
//   SUSPECT   SetSuspect(true): a hunt confirmed it bad; it takes only runs
//             that name it (the Scheduler's rule). Survives reconnects.
//   READY     connected and idle.
// A lost worker that registers again (or heartbeats again on its session)
// comes back as READY, BUSY or DRAINING by the rules above.
//
// Sessions: every Register() starts a new session for that name and returns
// its id. Heartbeat and Disconnect name the session, so a stream that a
// reconnect has replaced can neither keep the worker alive nor mark it lost.
//
// Time is always passed in (`now`); nothing here reads a clock, so tests are
// deterministic.
//
// Thread safety: all methods are safe to call concurrently; one mutex guards
// the table. Results are snapshots returned by value.
#ifndef COLLBENCH_SERVER_SCHEDULING_WORKER_REGISTRY_H_
#define COLLBENCH_SERVER_SCHEDULING_WORKER_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/scheduling/scheduler.h"

namespace collbench::scheduling {

enum class WorkerState { kReady, kBusy, kDraining, kLost, kSuspect };

// "READY", "BUSY", "DRAINING", "LOST", "SUSPECT" (the proto enum's names).
absl::string_view WorkerStateName(WorkerState state);

// What a worker reports when it connects.
struct WorkerRegistration {
  std::string name;           // "workers/{id}"
  std::string host_id;        // shared by co-resident containers
  int slots = 1;              // ranks it may host
  std::string agent_address;  // HOST:PORT of its Agent service
  // What its inventory offers to runs' needs (WorkerInfo::offers).
  std::shared_ptr<const std::vector<std::string>> offers;
  // When the coordinator first admitted its name (WorkerInfo::admit_time).
  absl::Time admit_time = absl::InfiniteFuture();
};

struct WorkerSnapshot {
  std::string name;
  std::string host_id;
  int slots = 0;
  absl::Time admit_time = absl::InfiniteFuture();
  std::string agent_address;
  std::shared_ptr<const std::vector<std::string>> offers;
  WorkerState state = WorkerState::kReady;
  bool draining = false;
  bool suspect = false;
  std::string current_run;  // "runs/{id}" holding it, or empty
  std::string lost_reason;  // LOST only: "worker workers/x stopped ..."
  absl::Time register_time;
  absl::Time last_heartbeat_time;
  uint64_t session = 0;
};

class WorkerRegistry {
 public:
  WorkerRegistry() = default;
  WorkerRegistry(const WorkerRegistry&) = delete;
  WorkerRegistry& operator=(const WorkerRegistry&) = delete;

  // OK if `registration` may be registered: InvalidArgument naming "name",
  // "host_id" or "slots" when one is missing or slots < 1. Register()
  // checks the same; callers check first when they must not act on a
  // registration that would fail.
  static absl::Status Validate(const WorkerRegistration& registration);

  // Adds the worker, or for a known name replaces what it reported and
  // starts a new session (the previous one is superseded). Counts as a
  // heartbeat. A run it holds stays held. Returns the session id.
  // Validate()'s errors. Who may register under a name is the caller's
  // decision (the RunManager checks the worker's secret first).
  absl::StatusOr<uint64_t> Register(const WorkerRegistration& registration,
                                    absl::Time now);

  // Records a heartbeat; a LOST worker comes back. NotFound for an unknown
  // name; FailedPrecondition when `session` has been superseded (the caller
  // should close that stream).
  absl::Status Heartbeat(absl::string_view name, uint64_t session,
                         absl::Time now);

  // The stream of `session` ended. Marks the worker LOST unless a newer
  // session replaced it. Returns true if it was newly marked lost (the
  // coordinator then fails the run it holds with lost_reason).
  bool Disconnect(absl::string_view name, uint64_t session);

  // Marks LOST every worker not already lost whose last heartbeat is more
  // than `timeout` before `now`, and returns them as they are now (LOST,
  // with current_run and lost_reason set).
  std::vector<WorkerSnapshot> ExpireStale(absl::Time now,
                                          absl::Duration timeout);

  // Marks the worker LOST for `reason`. Returns true if it was newly lost.
  bool MarkLost(absl::string_view name, absl::string_view reason);

  // NotFound for an unknown name. Both are idempotent.
  absl::Status Drain(absl::string_view name);
  absl::Status Undrain(absl::string_view name);
  // Quarantine (WorkerState::kSuspect) on or off. NotFound for an unknown
  // name; idempotent.
  absl::Status SetSuspect(absl::string_view name, bool suspect);

  // Forgets the worker. NotFound for an unknown name; FailedPrecondition
  // while a run holds it (release the run first).
  absl::Status Remove(absl::string_view name);

  // Records that `run` holds `workers` (Assignment::held_workers). All or
  // nothing: NotFound if one is not registered, FailedPrecondition if
  // another run holds one. Holding more workers for the same run adds them.
  absl::Status Hold(absl::string_view run,
                    const std::vector<std::string>& workers, bool share_host);

  // Frees the workers `run` holds and returns their names (empty if none).
  std::vector<std::string> Release(absl::string_view run);

  // Names may be "workers/{id}" or the bare id. NotFound if unknown.
  absl::StatusOr<WorkerSnapshot> Get(absl::string_view name) const;

  // Every worker, sorted by name.
  std::vector<WorkerSnapshot> List() const;

  // The workers at positions [start, start + count) of List(), and how many
  // there are in all: a page without copying the whole fleet.
  struct Page {
    std::vector<WorkerSnapshot> workers;
    size_t total = 0;
  };
  Page ListPage(size_t start, size_t count) const;

  // ScheduleInput::workers: every worker; schedulable unless LOST or
  // DRAINING.
  std::vector<WorkerInfo> SchedulerWorkers() const;

  // ScheduleInput::active: the runs holding workers, sorted by run name.
  std::vector<ActiveRun> ActiveRuns() const;

 private:
  struct Entry {
    WorkerRegistration registration;
    bool draining = false;
    bool suspect = false;
    bool lost = false;
    std::string current_run;
    std::string lost_reason;
    absl::Time register_time;
    absl::Time last_heartbeat_time;
    uint64_t session = 0;
  };

  // Accepts "workers/{id}" or the bare id.
  static const Entry* FindIn(const absl::btree_map<std::string, Entry>& workers,
                             absl::string_view name);
  Entry* FindLocked(absl::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Entry* FindLocked(absl::string_view name) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool MarkLostLocked(Entry& entry, std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static WorkerSnapshot ToSnapshot(const Entry& entry);

  mutable absl::Mutex mu_;
  absl::btree_map<std::string, Entry> workers_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, ActiveRun> runs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace collbench::scheduling

#endif  // COLLBENCH_SERVER_SCHEDULING_WORKER_REGISTRY_H_

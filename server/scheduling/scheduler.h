// SPDX-License-Identifier: Apache-2.0
// The coordinator's placement logic (docs/design/run-lifecycle.md#scheduler): which queued runs
// start now, on which workers, and which workers each run holds while it
// runs. Pure and deterministic: the same inputs give the same answer, nothing
// is read from the clock or the network, and nothing is remembered between
// calls, so the coordinator can call Schedule() whenever something changes (a
// run is queued or ends, a worker registers, drains or is lost).
//
// The inputs are plain structs; the coordinator translates its protos and its
// WorkerRegistry snapshot into them.
//
// Rules
// -----
// Policies (how a run's ranks map onto workers):
//   PACK      Fill each worker's slots before using the next (several ranks
//             per container). If one host can take the whole run, the run
//             stays on one host: the host needing the fewest workers, then
//             the one with the fewest free slots (best fit: bigger hosts stay
//             free for bigger runs), then the host admitted first. Otherwise
//             hosts are used in order of most free slots first (fewest hosts
//             touched), then admitted first. Within a host, workers with the
//             most slots come first (fewest workers), then admitted first.
//   SPREAD    Exactly one rank on each of `ranks` workers (one rank per
//             container), distinct hosts first: one worker from each host in
//             turn, then a second worker from each host, and so on. Hosts with
//             fewer registered workers come first (a run that holds whole
//             hosts then holds fewer idle workers), then admitted first;
//             within a host, workers admitted first.
// "Admitted first" is the fleet's order (WorkerInfo::admit_time, then the
// name; a host by its first-admitted worker, then its id): the
// coordinator's own record, so no worker moves itself to rank 0 or into
// every run by the name or host id it reports.
//   EXPLICIT  Exactly the listed workers, in the listed order, with
//             `ranks_per_worker` ranks each; `ranks` must equal
//             workers.size() * ranks_per_worker.
// The placement is in rank order: placement[0] hosts rank 0 and is the
// launcher.
//
// Holding (benchmarks must not share hardware):
//   * A run without share_host needs every worker on each host it touches to
//     be unheld, and then holds all of them (including workers it does not
//     use, and draining or lost ones, which are still on that hardware).
//   * A share_host run needs and holds only the workers it uses, and cannot
//     use a worker on a host that another run holds whole.
//   A worker runs at most one run at a time either way.
//
// Queue order, backfill and reservations:
//   Runs are considered in queue (FIFO) order. A run that cannot start now
//   does not stop later runs from being considered, but to keep it from
//   starving, later runs may not use the workers it is waiting for: for each
//   earlier run that could not start, its placement is computed as if every
//   held worker were free (avoiding the workers already reserved by runs
//   ahead of it when it can), and the workers that placement would hold are
//   reserved. A later run starts only on workers that are neither held nor
//   reserved (and, without share_host, only on hosts with no held or reserved
//   worker). A run that cannot be placed even with every held worker free
//   (it waits for a draining or lost worker) reserves nothing.
//
// Runs that can never start on the registered workers (CheckSatisfiable) are
// returned in `unsatisfiable` with the reason, neither started nor reserving,
// so the coordinator can fail them instead of queueing them forever.
//
// Thread safety: Scheduler is immutable after construction; Schedule() and
// CheckSatisfiable() may be called from any thread concurrently.
#ifndef COLLBENCH_SERVER_SCHEDULING_SCHEDULER_H_
#define COLLBENCH_SERVER_SCHEDULING_SCHEDULER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace collbench::scheduling {

enum class PlacementPolicy { kPack, kSpread, kExplicit };

// One registered worker, whatever its state.
struct WorkerInfo {
  std::string name;     // "workers/{id}"
  std::string host_id;  // shared by co-resident containers
  int slots = 1;        // ranks it may host; 0 or less: it takes no ranks
  // Takes new work once it is not held: connected and not draining. A worker
  // that is BUSY but otherwise healthy is schedulable (whether it is held
  // comes from ScheduleInput::active); DRAINING and LOST workers are not.
  bool schedulable = true;
  // Why it is not schedulable ("draining", "lost"), for waiting runs' reasons.
  std::string unavailable;
  // What its inventory offers, as "field=value" tokens a run's needs are
  // matched against ("backend=nccl", "mpi=mpich", "memory=hbw"); "field=*"
  // where the inventory does not say (a worker reporting no backends is not
  // judged on them), and null when nothing is known (judged on nothing).
  // Shared: the fleet is copied for every schedule.
  std::shared_ptr<const std::vector<std::string>> offers;
  // Quarantined by a hunt (SUSPECT): it takes only runs that name it (an
  // EXPLICIT placement or a worker selector's name), so a hunt can re-test
  // it and an operator can try it, while no other run lands on it.
  bool suspect = false;
  // When the coordinator first admitted its name: placement takes workers,
  // and hosts by their first-admitted worker, in this order, then by name
  // (docs/design/run-lifecycle.md#placement-order). Never something the
  // worker reports about itself, so no worker puts itself first by its
  // name or host id. Unknown (InfiniteFuture): after the known, by name.
  absl::Time admit_time = absl::InfiniteFuture();
};

// A run that holds workers now (scheduled or running).
struct ActiveRun {
  std::string name;                       // "runs/{id}"
  std::vector<std::string> held_workers;  // as returned in Assignment
  bool share_host = false;
};

// A queued run.
struct PendingRun {
  std::string name;  // "runs/{id}"
  int ranks = 0;
  PlacementPolicy policy = PlacementPolicy::kPack;
  // EXPLICIT only: "workers/{id}" or the bare id, in rank order.
  std::vector<std::string> workers;
  int ranks_per_worker = 0;  // EXPLICIT only; ignored otherwise
  bool share_host = false;
  // "field=value" tokens every worker it runs on must offer
  // (WorkerInfo::offers); the field is the RunSpec field that asks for it.
  std::vector<std::string> needs;
};

struct ScheduleInput {
  // Every registered worker, schedulable or not: CheckSatisfiable judges a
  // run against all of them, so a worker that is briefly lost or busy does
  // not make a run fail.
  std::vector<WorkerInfo> workers;
  std::vector<ActiveRun> active;
  std::vector<PendingRun> queue;  // FIFO order, oldest first
};

// One worker of a placement and the number of consecutive ranks on it.
struct PlacedWorker {
  std::string worker;  // canonical WorkerInfo::name
  std::string host_id;
  int ranks = 0;

  bool operator==(const PlacedWorker&) const = default;
};

// A run that starts now.
struct Assignment {
  std::string run;
  // Rank order: placement[0] hosts rank 0 and is the launcher.
  std::vector<PlacedWorker> placement;
  // The workers the run holds until it ends, sorted by name: those in
  // `placement` plus, without share_host, every other registered worker on
  // the hosts it touches.
  std::vector<std::string> held_workers;
  bool share_host = false;

  const std::string& launcher() const { return placement.front().worker; }
};

struct UnsatisfiableRun {
  std::string run;
  absl::Status reason;  // InvalidArgument naming the field
};

// A run that can start some day but not now, and why: "waiting for
// workers/x (draining)" when it needs workers that take no work now,
// "waiting for runs/a to release workers" when running runs hold what it
// needs, "waiting behind ..." when earlier queued runs have them reserved.
struct WaitingRun {
  std::string run;
  std::string reason;
};

struct ScheduleResult {
  std::vector<Assignment> started;  // in queue order
  std::vector<UnsatisfiableRun> unsatisfiable;
  std::vector<WaitingRun> waiting;  // in queue order
  // Workers kept free for runs that wait (see "reservations" above), sorted.
  std::vector<std::string> reserved_workers;
};

// OK if `run` could start on `all_workers` were none of them held, draining
// or lost; otherwise InvalidArgument whose message starts with the offending
// field: "ranks", "placement.workers", "placement.ranks_per_worker", or the
// field of a need no worker offers ("backend", "mpi", "memory"). Only the
// workers that offer every need count towards slots and workers.
// `all_workers` is every registered worker (the `schedulable` flag is not
// consulted).
absl::Status CheckSatisfiable(const PendingRun& run,
                              const std::vector<WorkerInfo>& all_workers);

// True if `requested` names `worker_name`: equal, or the bare id of
// "workers/{id}".
bool WorkerNameMatches(absl::string_view requested,
                       absl::string_view worker_name);

// True if `worker` offers every one of `needs`.
bool OffersAll(const WorkerInfo& worker, const std::vector<std::string>& needs);

class Scheduler {
 public:
  struct Options {
    // When false, the queue is strictly FIFO: nothing starts behind a run
    // that has to wait.
    bool backfill = true;
  };

  Scheduler() = default;
  explicit Scheduler(Options options) : options_(options) {}

  // Decides which queued runs start now. Held workers named in
  // `input.active` that are not registered are ignored.
  ScheduleResult Schedule(const ScheduleInput& input) const;

 private:
  Options options_;
};

}  // namespace collbench::scheduling

#endif  // COLLBENCH_SERVER_SCHEDULING_SCHEDULER_H_

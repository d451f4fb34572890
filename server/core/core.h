// SPDX-License-Identifier: Apache-2.0
// The coordinator's core as one piece: the worker registry, the journal to
// the store, the worker directory, the run lifecycle, the fleet that ties
// the two, and the retention sweeper, made in the order they depend on each
// other and stopped in reverse (the journal writes everything appended
// before anything it reports to goes). The app wires it to the listeners;
// tests make one over an in-memory store and a fake link.
//
// Every store call of the core goes through a NoIoCheckedStore
// (server/core/no_io_lock.h): none may be made under the lifecycle's or the
// directory's lock.
//
// Thread safety: the parts are thread-safe; Recover once, before serving.
#ifndef COLLBENCH_SERVER_CORE_CORE_H_
#define COLLBENCH_SERVER_CORE_CORE_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/core/fleet.h"
#include "server/core/journal.h"
#include "server/core/launcher_pool.h"
#include "server/core/no_io_lock.h"
#include "server/core/retention_sweeper.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/worker_directory.h"
#include "server/core/worker_link.h"
#include "server/scheduling/worker_registry.h"

namespace collbench {

struct CoreOptions {
  WorkerDirectoryOptions workers;
  // The launchers' tokens are the workers' (workers.tokens): the launcher
  // role's entries among them.
  RunManagerOptions runs;
  FleetOptions fleet;
  JournalOptions journal;
  RetentionPolicy retention;  // none by default
};

class Core {
 public:
  // None of the pointers is owned; all outlive the core.
  Core(Store* store, WatchHub* hub, WorkerLink* link, CoreOptions options);
  // Stops the journal first: everything appended is written and reported.
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // Loads the workers and the unfinished runs of a start from the store.
  absl::Status Recover(absl::Time now);

  scheduling::WorkerRegistry& registry() { return registry_; }
  Journal& journal() { return journal_; }
  WorkerDirectory& workers() { return workers_; }
  RunManager& runs() { return runs_; }
  Fleet& fleet() { return fleet_; }
  LauncherPool& launchers() { return launchers_; }
  RetentionSweeper& retention() { return retention_; }
  // The store as the core uses it (checked).
  Store& store() { return store_; }

 private:
  NoIoCheckedStore store_;
  scheduling::WorkerRegistry registry_;
  Journal journal_;
  WorkerDirectory workers_;
  LauncherPool launchers_;
  RunManager runs_;
  Fleet fleet_;
  RetentionSweeper retention_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_CORE_H_

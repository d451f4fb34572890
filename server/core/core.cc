// SPDX-License-Identifier: Apache-2.0
#include "server/core/core.h"

#include <utility>

#include "common/status_macros.h"

namespace collbench {

namespace {

LauncherPoolOptions LaunchersOf(const WorkerDirectoryOptions& workers) {
  LauncherPoolOptions options;
  options.tokens = workers.tokens;
  options.heartbeat_interval = workers.heartbeat_interval;
  return options;
}

RunManagerOptions WithLaunchers(RunManagerOptions options, const LauncherPool* launchers) {
  options.launchers = launchers;
  return options;
}

}  // namespace

Core::Core(Store* store, WatchHub* hub, WorkerLink* link, CoreOptions options)
    : store_(store),
      journal_(&store_, options.journal),
      workers_(&store_, &registry_, &journal_, options.workers),
      launchers_(LaunchersOf(options.workers)),
      runs_(&store_, &registry_, &workers_, &journal_, hub, link,
            WithLaunchers(std::move(options.runs), &launchers_)),
      fleet_(&workers_, &runs_, options.fleet, &launchers_),
      retention_(&store_, &runs_, options.retention) {}

Core::~Core() {
  workers_.FlushRows();
  journal_.Stop();
}

absl::Status Core::Recover(absl::Time now) {
  RETURN_IF_ERROR(workers_.Recover());
  return runs_.Recover(now);
}

}  // namespace collbench

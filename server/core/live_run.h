// SPDX-License-Identifier: Apache-2.0
// A run the lifecycle holds in memory (RunManager's, not for use outside
// server/core/): queued, or holding workers, with its phase and what that
// phase waits for.
#ifndef COLLBENCH_SERVER_CORE_LIVE_RUN_H_
#define COLLBENCH_SERVER_CORE_LIVE_RUN_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "analysis/references.h"
#include "collbench/v1/run.pb.h"
#include "server/core/run_manager.h"
#include "server/scheduling/scheduler.h"

namespace collbench {

// Where a live run is, as the lifecycle sees it. The stored state
// (Run.state) follows: QUEUED for kCreating to kWithdrawing, SCHEDULED,
// RUNNING also while kEnding, the final state from kCancelling on.
enum class Phase {
  kCreating,     // its create is appended, not yet stored: not in the queue
  kQueued,       // stored QUEUED, in the queue
  kWithdrawing,  // queued, its cancel appended: back to kQueued if that fails
  kScheduled,    // workers held, launcher told
  kRunning,      // the launcher reported the engine started
  kEnding,       // the launcher reported its end; results still on their way
  kCancelling,   // stopped (cancelled, failed) and so recorded; its workers
                 // held until the launcher confirms every process ended
};

// "CREATING", "QUEUED", ...: for messages and logs.
const char* PhaseName(Phase phase);

// What a violation of the no-I/O rule names (server/core/no_io_lock.h).
inline constexpr char kRunLockName[] = "RunManager::mu_";

// "runs/YYYYMMDD-HHMMSS-xxxxxx": a new run's name, random in its last part.
std::string NewRunName(absl::Time now);
// "runs/ID" from "ID" or "runs/ID".
std::string FullRunName(absl::string_view name);
// FailedPrecondition naming why a live run may not be deleted yet.
absl::Status NotDeletable(const v1::Run& run, Phase phase);
// What the scheduler knows of a run of `spec` named `name`.
scheduling::PendingRun PendingOf(const v1::RunSpec& spec, const std::string& name);
// A random hex string of `bytes` bytes (run names, run tokens).
std::string RandomHex(int bytes);
// The state change's log line (docs/design/observability.md#logs), written
// where the change is made, so it carries the request's fields: a failure
// at warn with its reason, the others at info.
void LogRunState(const v1::Run& run);

struct RunManager::LiveRun {
  v1::Run run;
  Phase phase = Phase::kCreating;
  std::string token;  // the run's token, from kScheduled on
  absl::Time deadline = absl::InfiniteFuture();  // the run's timeout, from kScheduled on
  // Since when its launcher is away (a coordinator restart, a broken
  // stream): it fails once away for readopt_grace.
  std::optional<absl::Time> launcher_away_since;
  absl::Time cancel_deadline = absl::InfiniteFuture();  // kCancelling: workers freed then
  // kEnding: what the launcher reported.
  int64_t results_total = 0;
  v1::RunState final_state = v1::RUN_STATE_UNSPECIFIED;
  std::string final_error;
  // Results 0..stored_through are stored, and these past a gap (arrived
  // out of order after a reconnect).
  int64_t stored_through = -1;
  std::set<int64_t> stored_ahead;
  // From the spec, on first use.
  std::optional<int64_t> max_results;
  // What a result's references are computed from (its workers' memory
  // bandwidth, links and class), on first use.
  std::optional<PathFacts> path;
  RunClass run_class;
};

// What a change under the lock tells watchers, gathered while the lock is
// held and told once it is not (the watch hub is never called under it).
class RunManager::Outbox {
 public:
  void Publish(v1::RunEvent event) { actions_.push_back({std::move(event), false}); }
  // No more events of `run` follow (it reached a final state).
  void End(const std::string& run) {
    v1::RunEvent end;
    end.set_run(run);
    actions_.push_back({std::move(end), true});
  }
  // REQUIRES: the caller holds none of the run manager's locks.
  void Deliver(WatchHub* hub) {
    for (Action& action : actions_) {
      if (action.end) {
        hub->End(action.event.run());
      } else {
        hub->Publish(action.event);
      }
    }
    actions_.clear();
  }

 private:
  struct Action {
    v1::RunEvent event;
    bool end;
  };
  std::vector<Action> actions_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_LIVE_RUN_H_

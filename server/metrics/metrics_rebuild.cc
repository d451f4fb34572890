// SPDX-License-Identifier: Apache-2.0
// CoordinatorMetrics::RebuildFromStore: the collective series of a
// restarted coordinator, from the results its store kept.
#include <algorithm>
#include <utility>

#include "api/convert.h"
#include "common/status_macros.h"
#include "server/metrics/coordinator_metrics.h"

namespace collbench {

absl::StatusOr<std::vector<v1::Run>> CoordinatorMetrics::StoredRunsOldestFirst(Store& store) {
  std::vector<v1::Run> runs;
  std::string token;
  do {
    ASSIGN_OR_RETURN(Store::RunPage page,
                     store.ListRuns(Store::kMaxPageSize, token, v1::RUN_STATE_UNSPECIFIED));
    for (v1::Run& run : page.runs) runs.push_back(std::move(run));
    token = std::move(page.next_page_token);
  } while (!token.empty());
  std::reverse(runs.begin(), runs.end());  // ListRuns pages newest first
  return runs;
}

absl::Status CoordinatorMetrics::RebuildFromStore(Store& store) {
  ASSIGN_OR_RETURN(const std::vector<v1::Run> runs, StoredRunsOldestFirst(store));
  for (const v1::Run& run : runs) {
    // Only runs that were scheduled can have results.
    if (run.hosts().empty() && run.sizes_done() == 0) continue;
    ASSIGN_OR_RETURN(const std::vector<v1::SizeResult> results, store.ListResults(run.name()));
    absl::MutexLock lock(&mu_);
    Tracked tracked;
    tracked.spec = SpecAsRun(run);
    tracked.state = run.state();
    tracked.pool = RunPool(run, pool_label_);
    // A size the spec does not name was counted when it arrived.
    for (const v1::SizeResult& result : results) (void)AddResultLocked(tracked, result);
    if (IsFinalRunState(run.state())) {
      FinishLocked(run.name(), tracked);
    } else {
      runs_[run.name()] = std::move(tracked);
    }
  }
  return absl::OkStatus();
}

}  // namespace collbench

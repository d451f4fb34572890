// SPDX-License-Identifier: Apache-2.0
// Run retention (docs/operations/lifecycle.md, "Retention"): which finished runs a
// coordinator started with --retain-runs N and/or --retain-for DURATION
// deletes. Only finished runs (SUCCEEDED, FAILED, CANCELLED) are ever
// considered; queued, scheduled and running runs are kept whatever their
// age. The RetentionSweeper applies the policy (retention_sweeper.h); this
// file only decides, so the rule is tested on its own.
#ifndef COLLBENCH_SERVER_CORE_RETENTION_H_
#define COLLBENCH_SERVER_CORE_RETENTION_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/store/store.h"

namespace collbench {

struct RetentionPolicy {
  // Keep the newest N finished runs (by creation, as runs are listed);
  // 0: no limit on their number.
  int keep_runs = 0;
  // Delete a finished run once it ended longer ago than this (a run with
  // no end time: since it was created); zero: no limit on their age.
  absl::Duration keep_for = absl::ZeroDuration();

  bool active() const { return keep_runs > 0 || keep_for > absl::ZeroDuration(); }
};

// The names of the runs of `finished` (Store::ListFinishedRuns, newest
// first) that `policy` does not keep at `now`, in the same order. A run
// goes when either limit says so.
std::vector<std::string> RunsPastRetention(const std::vector<Store::FinishedRun>& finished,
                                           const RetentionPolicy& policy, absl::Time now);

// The policy as its flags, for logs: "--retain-runs 100 --retain-for 720h".
std::string DescribeRetention(const RetentionPolicy& policy);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_RETENTION_H_

// SPDX-License-Identifier: Apache-2.0
// Applies a run retention policy (retention.h) to the store: the finished
// runs the policy does not keep are deleted, oldest first, at most 1000 per
// pass, never a run that is still live (a cancelled run whose kill is
// unconfirmed waits for a later pass). The coordinator runs a pass at
// start, after recovery, and every retention interval on its ticker.
//
// Thread safety: Sweep may be called from any thread, one pass at a time.
#ifndef COLLBENCH_SERVER_CORE_RETENTION_SWEEPER_H_
#define COLLBENCH_SERVER_CORE_RETENTION_SWEEPER_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/core/retention.h"
#include "server/core/run_manager.h"
#include "server/store/store.h"

namespace collbench {

class RetentionSweeper {
 public:
  // Neither pointer is owned; both outlive the sweeper.
  RetentionSweeper(Store* store, RunManager* runs, RetentionPolicy policy)
      : store_(store), runs_(runs), policy_(policy) {}

  // One pass at `now`; returns the runs it deleted and logs them. A store
  // error is logged and ends the pass (the next one tries again). Nothing
  // when the policy is not active.
  std::vector<std::string> Sweep(absl::Time now);
  const RetentionPolicy& policy() const { return policy_; }

 private:
  Store* const store_;
  RunManager* const runs_;
  const RetentionPolicy policy_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_RETENTION_SWEEPER_H_

// SPDX-License-Identifier: Apache-2.0
#include "server/core/retention_sweeper.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace collbench {
namespace {

// At most this many names in one log line of a pass.
constexpr size_t kNamesLogged = 20;
// Runs one pass deletes at most (one store transaction each): a long
// backlog, when a policy is first set, goes over several passes rather
// than holding up the ticker that calls it.
constexpr size_t kMaxDeletesPerPass = 1000;

}  // namespace

std::vector<std::string> RetentionSweeper::Sweep(absl::Time now) {
  if (!policy_.active()) return {};
  absl::StatusOr<std::vector<Store::FinishedRun>> finished = store_->ListFinishedRuns();
  if (!finished.ok()) {
    LogError("store.error", absl::StrCat("retention (", DescribeRetention(policy_),
                                         "): listing runs"))
        .Error(finished.status());
    return {};
  }
  std::vector<std::string> candidates = RunsPastRetention(*finished, policy_, now);
  // Oldest first, so a capped pass removes the oldest.
  std::reverse(candidates.begin(), candidates.end());
  if (candidates.size() > kMaxDeletesPerPass) candidates.resize(kMaxDeletesPerPass);
  RunManager::Deleted deleted = runs_->DeleteFinishedRuns(candidates);
  if (!deleted.error.ok()) {
    LogError("store.error", absl::StrCat("retention (", DescribeRetention(policy_), "): ",
                                         deleted.error.message()))
        .Error(deleted.error);
  }
  const std::vector<std::string>& names = deleted.names;
  if (!names.empty()) {
    const size_t shown = std::min(names.size(), kNamesLogged);
    LogInfo("retention.deleted",
            absl::StrCat("retention (", DescribeRetention(policy_), ") deleted ", names.size(),
                         " finished runs: ",
                         absl::StrJoin(names.begin(), names.begin() + shown, ", "),
                         shown < names.size() ? absl::StrCat(" and ", names.size() - shown, " more")
                                              : ""))
        .Int("deleted", static_cast<int64_t>(names.size()));
  }
  return std::move(deleted.names);
}

}  // namespace collbench

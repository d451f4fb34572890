// SPDX-License-Identifier: Apache-2.0
#include "server/core/retention.h"

#include "absl/strings/str_cat.h"

namespace collbench {

std::vector<std::string> RunsPastRetention(const std::vector<Store::FinishedRun>& finished,
                                           const RetentionPolicy& policy, absl::Time now) {
  std::vector<std::string> past;
  const bool by_age = policy.keep_for > absl::ZeroDuration();
  const int64_t oldest_kept_ns = by_age ? absl::ToUnixNanos(now - policy.keep_for) : 0;
  for (size_t i = 0; i < finished.size(); ++i) {
    const Store::FinishedRun& run = finished[i];
    const bool too_many = policy.keep_runs > 0 && i >= static_cast<size_t>(policy.keep_runs);
    const int64_t ended_ns = run.end_time_ns != 0 ? run.end_time_ns : run.create_time_ns;
    const bool too_old = by_age && ended_ns < oldest_kept_ns;
    if (too_many || too_old) past.push_back(run.name);
  }
  return past;
}

std::string DescribeRetention(const RetentionPolicy& policy) {
  std::string text;
  if (policy.keep_runs > 0) absl::StrAppend(&text, "--retain-runs ", policy.keep_runs);
  if (policy.keep_for > absl::ZeroDuration()) {
    absl::StrAppend(&text, text.empty() ? "" : " ", "--retain-for ",
                    absl::FormatDuration(policy.keep_for));
  }
  return text;
}

}  // namespace collbench

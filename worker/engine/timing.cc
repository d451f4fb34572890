// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/status_macros.h"
#include "worker/engine/communicator.h"

namespace collbench {
namespace timing_internal {

absl::Status BarrierBeforeTiming(Communicator& comm) { return comm.Barrier(); }

absl::Status BarrierBetweenIterations(Communicator& comm) { return comm.Barrier(); }

absl::StatusOr<int> NextAdaptiveBatch(Communicator& comm, const IterationPolicy& policy,
                                      const LocalTiming& timing, Clock::time_point start) {
  // The slowest rank's elapsed time and widest interval rule, so every rank
  // stops at the same count.
  std::vector<double> progress = {
      std::chrono::duration<double>(Clock::now() - start).count(),
      RelativeMedianCi(timing.histogram)};
  RETURN_IF_ERROR(comm.AllreduceMax(&progress));
  const double elapsed_s = progress[0];
  const double budget_s = *policy.time_budget_s;
  const bool precise = timing.iters >= static_cast<uint64_t>(policy.min_iters) &&
                       progress[1] <= policy.target_relative_ci;
  if (elapsed_s >= budget_s || precise) return 0;
  const double per_iter_s = elapsed_s / static_cast<double>(timing.iters);
  const double left = (budget_s - elapsed_s) / std::max(per_iter_s, 1e-9);
  // Grow geometrically (to check precision often enough) but never past
  // what the budget has room for.
  return static_cast<int>(
      std::clamp<double>(std::min(left, static_cast<double>(timing.iters)), 1.0, 1e8));
}

}  // namespace timing_internal

double RelativeMedianCi(const Histogram& histogram) {
  const double n = static_cast<double>(histogram.count());
  if (n < 2) return 1.0;
  // Order statistics bounding the median with ~95% confidence:
  // n/2 -+ 1.96 sqrt(n)/2 (normal approximation to the binomial).
  const double half_span = 1.96 * std::sqrt(n) / 2.0;
  const double lo_q = std::max(0.0, (n / 2.0 - half_span) / n);
  const double hi_q = std::min(1.0, (n / 2.0 + half_span + 1.0) / n);
  const double median = histogram.QuantileNs(0.5);
  if (median <= 0) return 1.0;
  const double half_width =
      (histogram.QuantileNs(hi_q) - histogram.QuantileNs(lo_q)) / 2.0;
  return half_width / median;
}

absl::StatusOr<RankSummary> SummarizeAcrossRanks(Communicator& comm,
                                                 const LocalTiming& local) {
  RankSummary summary;
  summary.iters = local.iters;
  const double mean_s =
      local.iters == 0 ? 0.0 : static_cast<double>(local.total_ns) * 1e-9 / local.iters;
  std::vector<double> sum = {mean_s}, min = {mean_s}, max = {mean_s};
  RETURN_IF_ERROR(comm.AllreduceSum(&sum));
  RETURN_IF_ERROR(comm.AllreduceMin(&min));
  RETURN_IF_ERROR(comm.AllreduceMax(&max));
  summary.avg_s = sum[0] / comm.size();
  summary.min_s = min[0];
  summary.max_s = max[0];
  const std::vector<double> mine = {mean_s, local.histogram.QuantileNs(0.50) * 1e-9,
                                    local.histogram.QuantileNs(0.99) * 1e-9};
  ASSIGN_OR_RETURN(const std::vector<double> every_rank, comm.GatherDoubles(mine));
  for (size_t i = 0; i + mine.size() <= every_rank.size(); i += mine.size()) {
    summary.ranks.push_back({every_rank[i], every_rank[i + 1], every_rank[i + 2]});
  }
  summary.histogram = local.histogram;
  RETURN_IF_ERROR(comm.MergeHistogramsToRoot(&summary.histogram));
  if (comm.rank() == 0) {
    summary.p50_s = summary.histogram.QuantileNs(0.50) * 1e-9;
    summary.p90_s = summary.histogram.QuantileNs(0.90) * 1e-9;
    summary.p99_s = summary.histogram.QuantileNs(0.99) * 1e-9;
  }
  return summary;
}

}  // namespace collbench

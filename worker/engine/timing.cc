#include "worker/engine/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/status_macros.h"
#include "worker/engine/communicator.h"

namespace collbench {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `n` timed iterations, appending to `timing`. One clock read per
// iteration: each iteration's end is the next one's start, so the only
// work between two reads besides the iteration is recording the sample.
absl::Status TimedBatch(int n, double scale,
                        const std::function<absl::Status()>& iteration,
                        LocalTiming* timing) {
  Clock::time_point previous = Clock::now();
  for (int i = 0; i < n; ++i) {
    absl::Status status = iteration();
    const Clock::time_point now = Clock::now();
    if (!status.ok()) return status;
    uint64_t ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - previous).count());
    if (scale != 1.0) ns = static_cast<uint64_t>(std::llround(ns * scale));
    timing->histogram.Record(ns);
    timing->total_ns += ns;
    previous = now;
  }
  timing->iters += n;
  return absl::OkStatus();
}

absl::StatusOr<LocalTiming> Adaptive(Communicator& comm, const IterationPolicy& policy,
                                     const std::function<absl::Status()>& iteration) {
  LocalTiming timing;
  const double budget_s = *policy.time_budget_s;
  const Clock::time_point start = Clock::now();
  int batch = std::max(policy.min_iters, 1);
  while (true) {
    RETURN_IF_ERROR(TimedBatch(batch, policy.time_scale, iteration, &timing));
    // Decide together, outside the timed region: the slowest rank's elapsed
    // time and widest interval rule, so every rank stops at the same count.
    std::vector<double> progress = {
        std::chrono::duration<double>(Clock::now() - start).count(),
        RelativeMedianCi(timing.histogram)};
    RETURN_IF_ERROR(comm.AllreduceMax(&progress));
    const double elapsed_s = progress[0];
    const bool precise = timing.iters >= static_cast<uint64_t>(policy.min_iters) &&
                         progress[1] <= policy.target_relative_ci;
    if (elapsed_s >= budget_s || precise) break;
    const double per_iter_s = elapsed_s / static_cast<double>(timing.iters);
    const double left = (budget_s - elapsed_s) / std::max(per_iter_s, 1e-9);
    // Grow geometrically (to check precision often enough) but never past
    // what the budget has room for.
    batch = static_cast<int>(std::clamp<double>(
        std::min(left, static_cast<double>(timing.iters)), 1.0, 1e8));
  }
  return timing;
}

}  // namespace

absl::StatusOr<LocalTiming> TimeIterations(
    Communicator& comm, const IterationPolicy& policy,
    const std::function<absl::Status()>& iteration) {
  for (int i = 0; i < policy.warmup; ++i) RETURN_IF_ERROR(iteration());
  RETURN_IF_ERROR(comm.Barrier());
  if (policy.time_budget_s.has_value()) return Adaptive(comm, policy, iteration);
  LocalTiming timing;
  RETURN_IF_ERROR(TimedBatch(policy.iters, policy.time_scale, iteration, &timing));
  return timing;
}

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

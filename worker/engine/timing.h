// SPDX-License-Identifier: Apache-2.0
// The measurement loop shared by every operation and scenario
// (docs/design/data-plane.md#timing): warmup untimed iterations, a barrier,
// then the timed iterations with no communication inside the timed
// intervals. Each iteration is timed on this rank with the monotonic clock,
// the iteration function including any stream synchronize. With
// `barrier_after_each` (--sync barrier) an untimed barrier separates the
// iterations, so each sample is one isolated operation (OSU); without it
// they run back to back (nccl-tests).
//
// In adaptive mode the timed iterations run in growing batches; between
// batches (outside the timed region) the ranks agree to stop once the time
// budget is spent or the p50's 95% confidence interval is within 1%.
#ifndef COLLBENCH_WORKER_ENGINE_TIMING_H_
#define COLLBENCH_WORKER_ENGINE_TIMING_H_

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/histogram.h"
#include "worker/engine/tick_clock.h"

namespace collbench {

class Communicator;

struct IterationPolicy {
  int warmup = 0;
  int iters = 0;                       // fixed mode (used when no budget)
  std::optional<double> time_budget_s;  // adaptive mode
  int min_iters = 10;                   // adaptive: never fewer
  double target_relative_ci = 0.01;     // adaptive: p50 CI half-width / p50
  // Applied to every measured iteration time before recording (0.5 turns a
  // ping-pong round trip into latency).
  double time_scale = 1.0;
  // An untimed barrier after every timed iteration (--sync barrier).
  bool barrier_after_each = false;
};

// This rank's timings.
struct LocalTiming {
  uint64_t iters = 0;
  uint64_t total_ns = 0;
  Histogram histogram;
};

// Runs the loop. Every rank must call it with the same policy. An iteration
// that fails ends the loop on that rank with its status; callers should
// treat that as fatal for the job (peers may be inside a collective).
// `iteration` is any callable returning absl::Status; it is a template
// parameter so the call inlines into the timed loop.
template <typename Iteration>
absl::StatusOr<LocalTiming> TimeIterations(Communicator& comm, const IterationPolicy& policy,
                                           Iteration&& iteration);

// One rank's own statistics: the mean of its iterations and the quantiles
// of its own histogram.
struct RankStats {
  double mean_s = 0, p50_s = 0, p99_s = 0;
};

// Statistics over ranks: avg = mean of each rank's mean; min/max = extremes
// of the per-rank means (OSU); percentiles from the merged histogram.
struct RankSummary {
  uint64_t iters = 0;  // per rank
  double avg_s = 0, min_s = 0, max_s = 0;
  double p50_s = 0, p90_s = 0, p99_s = 0;
  Histogram histogram;  // merged over ranks; valid on rank 0 only
  std::vector<RankStats> ranks;  // by rank of the communicator; rank 0 only
};

absl::StatusOr<RankSummary> SummarizeAcrossRanks(Communicator& comm,
                                                 const LocalTiming& local);

// The nearest-rank 95% confidence interval of the median from a
// histogram, relative to the median (half-width / median). Exposed for tests.
double RelativeMedianCi(const Histogram& histogram);

// --- Implementation --------------------------------------------------------
namespace timing_internal {

using Clock = std::chrono::steady_clock;

absl::Status BarrierBetweenIterations(Communicator& comm);

// Samples kept raw between two flushes into the histogram.
inline constexpr int kTickBufferSize = 4096;

// Converts `count` raw intervals to nanoseconds and records them.
inline void RecordTicks(const uint64_t* ticks, int count, double ns_per_tick,
                        LocalTiming* timing) {
  for (int i = 0; i < count; ++i) {
    const uint64_t ns =
        static_cast<uint64_t>(std::llround(static_cast<double>(ticks[i]) * ns_per_tick));
    timing->histogram.Record(ns);
    timing->total_ns += ns;
  }
}

// Runs `n` timed iterations, appending to `timing`. Each iteration is
// bracketed by two reads of the tick clock, so recording the sample and the
// barrier of --sync barrier stay outside the measured interval. Between
// iterations only the raw interval is stored, as the minimal loop of
// bench/fidelity.py does; converting and recording happen in bursts of
// kTickBufferSize. With --sync none the work between two calls sets how
// far they overlap, so it is kept as small as the reference's.
template <typename Iteration>
absl::Status TimedBatch(Communicator& comm, int n, const IterationPolicy& policy,
                        Iteration& iteration, LocalTiming* timing) {
  const TickClock& clock = DefaultTickClock();
  const double ns_per_tick = clock.ns_per_tick() * policy.time_scale;
  const bool barrier = policy.barrier_after_each;
  std::array<uint64_t, kTickBufferSize> ticks;
  int pending = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t start = clock.Start();
    absl::Status status = iteration();
    const uint64_t end = clock.End();
    if (!status.ok()) return status;
    ticks[pending++] = end - start;
    if (pending == kTickBufferSize) {
      RecordTicks(ticks.data(), pending, ns_per_tick, timing);
      pending = 0;
    }
    if (barrier) {
      status = BarrierBetweenIterations(comm);
      if (!status.ok()) return status;
    }
  }
  RecordTicks(ticks.data(), pending, ns_per_tick, timing);
  timing->iters += n;
  return absl::OkStatus();
}

// Between batches (outside the timed region) the ranks agree whether to
// stop: returns the next batch size, or 0 to stop.
absl::StatusOr<int> NextAdaptiveBatch(Communicator& comm, const IterationPolicy& policy,
                                      const LocalTiming& timing, Clock::time_point start);

absl::Status BarrierBeforeTiming(Communicator& comm);

}  // namespace timing_internal

template <typename Iteration>
absl::StatusOr<LocalTiming> TimeIterations(Communicator& comm, const IterationPolicy& policy,
                                           Iteration&& iteration) {
  for (int i = 0; i < policy.warmup; ++i) {
    absl::Status status = iteration();
    if (!status.ok()) return status;
  }
  absl::Status barrier = timing_internal::BarrierBeforeTiming(comm);
  if (!barrier.ok()) return barrier;
  LocalTiming timing;
  if (!policy.time_budget_s.has_value()) {
    absl::Status status =
        timing_internal::TimedBatch(comm, policy.iters, policy, iteration, &timing);
    if (!status.ok()) return status;
    return timing;
  }
  const timing_internal::Clock::time_point start = timing_internal::Clock::now();
  int batch = std::max(policy.min_iters, 1);
  while (batch > 0) {
    absl::Status status =
        timing_internal::TimedBatch(comm, batch, policy, iteration, &timing);
    if (!status.ok()) return status;
    absl::StatusOr<int> next = timing_internal::NextAdaptiveBatch(comm, policy, timing, start);
    if (!next.ok()) return next.status();
    batch = *next;
  }
  return timing;
}

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_TIMING_H_

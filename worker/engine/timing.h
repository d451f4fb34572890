// The measurement loop shared by every operation and scenario
// (DESIGN §2, Measurement conventions): warmup untimed iterations, a barrier,
// then the timed iterations with no communication inside the loop. Each
// iteration is timed on this rank with the monotonic clock, the iteration
// function including any stream synchronize.
//
// In adaptive mode the timed iterations run in growing batches; between
// batches (outside the timed region) the ranks agree to stop once the time
// budget is spent or the p50's 95% confidence interval is within 1%.
#ifndef COLLBENCH_WORKER_ENGINE_TIMING_H_
#define COLLBENCH_WORKER_ENGINE_TIMING_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "common/histogram.h"

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
absl::StatusOr<LocalTiming> TimeIterations(
    Communicator& comm, const IterationPolicy& policy,
    const std::function<absl::Status()>& iteration);

// Statistics over ranks: avg = mean of each rank's mean; min/max = extremes
// of the per-rank means (OSU); percentiles from the merged histogram.
struct RankSummary {
  uint64_t iters = 0;  // per rank
  double avg_s = 0, min_s = 0, max_s = 0;
  double p50_s = 0, p90_s = 0, p99_s = 0;
  Histogram histogram;  // merged over ranks; valid on rank 0 only
};

absl::StatusOr<RankSummary> SummarizeAcrossRanks(Communicator& comm,
                                                 const LocalTiming& local);

// The nearest-rank 95% confidence interval of the median from a
// histogram, relative to the median (half-width / median). Exposed for tests.
double RelativeMedianCi(const Histogram& histogram);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_TIMING_H_

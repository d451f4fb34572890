// SPDX-License-Identifier: Apache-2.0
// The mapping from the engine's log-linear histograms to Prometheus
// histogram buckets at powers of two of nanoseconds
// (docs/design/observability.md#histogram-buckets). Every power of two is an
// exact bucket edge of the engine histogram, so the counts carry over without
// loss: the Prometheus bucket le=2^k ns holds exactly the samples <= 2^k ns.
#ifndef COLLBENCH_SERVER_METRICS_LATENCY_BUCKETS_H_
#define COLLBENCH_SERVER_METRICS_LATENCY_BUCKETS_H_

#include <vector>

#include "common/histogram.h"

namespace collbench {

// Exponents of the finite bucket edges: 2^kLatencyMinExponent ns (64 ns)
// to 2^kLatencyMaxExponent ns (about 68.7 s). Samples above the last edge
// land in +Inf only.
inline constexpr int kLatencyMinExponent = 6;
inline constexpr int kLatencyMaxExponent = 36;

// The finite upper bounds, in seconds, in increasing order.
std::vector<double> LatencyBucketBoundsSeconds();

// Per-bucket increments for prometheus::Histogram::ObserveMultiple: one
// element per finite bound (samples in (previous edge, this edge]; the
// first takes everything <= 2^kLatencyMinExponent ns) and a last one for
// the samples above the largest edge. They sum to histogram.count().
std::vector<double> LatencyBucketIncrements(const Histogram& histogram);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_LATENCY_BUCKETS_H_

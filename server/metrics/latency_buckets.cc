// SPDX-License-Identifier: Apache-2.0
#include "server/metrics/latency_buckets.h"

#include <cmath>
#include <cstdint>

namespace collbench {

static_assert(kLatencyMaxExponent <= Histogram::kMaxExponent,
              "Prometheus edges must be edges of the engine histogram");

std::vector<double> LatencyBucketBoundsSeconds() {
  std::vector<double> bounds;
  for (int k = kLatencyMinExponent; k <= kLatencyMaxExponent; ++k) {
    bounds.push_back(std::ldexp(1.0, k) * 1e-9);
  }
  return bounds;
}

std::vector<double> LatencyBucketIncrements(const Histogram& histogram) {
  std::vector<double> increments;
  uint64_t below = 0;
  for (int k = kLatencyMinExponent; k <= kLatencyMaxExponent; ++k) {
    const uint64_t at_or_below = histogram.CountAtOrBelowPowerOfTwo(k);
    increments.push_back(static_cast<double>(at_or_below - below));
    below = at_or_below;
  }
  increments.push_back(static_cast<double>(histogram.count() - below));
  return increments;
}

}  // namespace collbench

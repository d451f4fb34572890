// SPDX-License-Identifier: Apache-2.0
#include "analysis/regression.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

using Buckets = std::vector<std::pair<int, uint64_t>>;  // index -> count, ascending

// The median of bucketed samples: the bucket holding the middle sample,
// interpolated linearly inside it.
double MedianOf(const Buckets& buckets) {
  uint64_t total = 0;
  for (const auto& [index, count] : buckets) total += count;
  if (total == 0) return 0;
  const double target = static_cast<double>(total) / 2;
  double below = 0;
  for (const auto& [index, count] : buckets) {
    if (below + static_cast<double>(count) >= target) {
      const double low = static_cast<double>(Histogram::LowerBound(index));
      const double high = static_cast<double>(Histogram::UpperBound(index));
      const double within = count == 0 ? 0.5 : (target - below) / static_cast<double>(count);
      return low + (high - low) * within;
    }
    below += static_cast<double>(count);
  }
  return static_cast<double>(Histogram::UpperBound(buckets.back().first));
}

Buckets Resampled(const Buckets& buckets, std::mt19937_64& random) {
  Buckets out;
  out.reserve(buckets.size());
  for (const auto& [index, count] : buckets) {
    std::poisson_distribution<uint64_t> draw(static_cast<double>(count));
    const uint64_t n = draw(random);
    if (n > 0) out.emplace_back(index, n);
  }
  return out;
}

double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const size_t i = static_cast<size_t>(at);
  if (i + 1 >= values.size()) return values.back();
  return values[i] + (values[i + 1] - values[i]) * (at - static_cast<double>(i));
}

}  // namespace

double MannWhitneyP(const Histogram& a, const Histogram& b) {
  const double na = static_cast<double>(a.count()), nb = static_cast<double>(b.count());
  const double n = na + nb;
  double rank_sum_b = 0, below = 0, ties = 0;
  for (int i = 0; i < Histogram::kNumBuckets; ++i) {
    const double ca = static_cast<double>(a.bucket_count(i));
    const double cb = static_cast<double>(b.bucket_count(i));
    const double t = ca + cb;
    if (t == 0) continue;
    rank_sum_b += cb * (below + (t + 1) / 2);  // tied samples share the mean rank
    ties += t * t * t - t;
    below += t;
  }
  const double u = rank_sum_b - nb * (nb + 1) / 2;
  const double mean = na * nb / 2;
  const double variance = na * nb / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (variance <= 0) return 1;  // every sample in one bucket: nothing tells them apart
  const double z = std::max(0.0, std::abs(u - mean) - 0.5) / std::sqrt(variance);
  return std::erfc(z / std::sqrt(2.0));
}

absl::StatusOr<Comparison> CompareHistograms(const Histogram& baseline,
                                             const Histogram& candidate,
                                             const CompareOptions& options) {
  if (baseline.count() == 0 || candidate.count() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        baseline.count() == 0 ? "the baseline" : "the candidate",
        " has no samples to compare"));
  }
  if (options.threshold < 0 || !(options.alpha > 0 && options.alpha < 1) ||
      options.bootstrap_rounds < 20) {
    return absl::InvalidArgumentError(
        "compare options: threshold >= 0, alpha in (0, 1), at least 20 bootstrap rounds");
  }
  const Buckets base = baseline.Sparse(), cand = candidate.Sparse();
  Comparison c;
  c.baseline_median_ns = MedianOf(base);
  c.candidate_median_ns = MedianOf(cand);
  c.ratio = c.baseline_median_ns > 0 ? c.candidate_median_ns / c.baseline_median_ns : 0;
  std::mt19937_64 random(options.seed);
  std::vector<double> ratios;
  ratios.reserve(options.bootstrap_rounds);
  for (int r = 0; r < options.bootstrap_rounds; ++r) {
    const Buckets b = Resampled(base, random), k = Resampled(cand, random);
    if (b.empty() || k.empty()) continue;
    const double mb = MedianOf(b);
    if (mb > 0) ratios.push_back(MedianOf(k) / mb);
  }
  c.ratio_low = ratios.empty() ? c.ratio : Percentile(ratios, 0.025);
  c.ratio_high = ratios.empty() ? c.ratio : Percentile(ratios, 0.975);
  c.p_value = MannWhitneyP(baseline, candidate);
  c.significant = c.p_value < options.alpha && (c.ratio_low > 1 || c.ratio_high < 1);
  if (!c.significant) {
    c.verdict = "ok";
  } else if (c.ratio > 1 + options.threshold) {
    c.verdict = "regression";
  } else {
    c.verdict = c.ratio > 1 ? "slower" : "faster";
  }
  return c;
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// Is this result slower than its baseline?
// (docs/design/workflows.md#baselines-and-checks): two latency distributions of
// one configuration compared from their histograms alone, as the store keeps
// them: the ratio of the medians with a bootstrap 95% interval, a rank test on
// the two distributions, and a verdict.
//
// The rank test is Mann-Whitney's U with the normal approximation, ties
// counted per histogram bucket (a bucket is one tied value: the histogram
// knows no finer); the interval is a Poisson bootstrap over the buckets
// (each bucket's count redrawn as Poisson(count)), so it costs buckets x
// rounds, not samples.
//
// Verdicts: "ok" unless the difference is significant (p < alpha and the
// interval excludes 1); then "regression" when the median ratio is above
// 1 + threshold, "slower" when above 1 but within it, "faster" below 1.
#ifndef COLLBENCH_ANALYSIS_REGRESSION_H_
#define COLLBENCH_ANALYSIS_REGRESSION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/histogram.h"

namespace collbench {

struct CompareOptions {
  double threshold = 0.05;  // a regression is slower by more than this (5%)
  double alpha = 0.01;      // two-sided significance level of the rank test
  int bootstrap_rounds = 400;
  uint64_t seed = 1;        // the bootstrap's, so a check is reproducible
};

struct Comparison {
  double baseline_median_ns = 0;
  double candidate_median_ns = 0;
  double ratio = 0;       // candidate median over baseline median
  double ratio_low = 0;   // its 95% bootstrap interval
  double ratio_high = 0;
  double p_value = 1;     // Mann-Whitney, two-sided
  bool significant = false;
  std::string verdict;    // ok | faster | slower | regression
};

// InvalidArgument when either histogram is empty or the options are out of
// range (threshold < 0, alpha outside (0, 1), rounds < 20).
absl::StatusOr<Comparison> CompareHistograms(const Histogram& baseline,
                                             const Histogram& candidate,
                                             const CompareOptions& options = {});

// Two-sided p-value of Mann-Whitney's U between the two histograms (ties
// per bucket, normal approximation with continuity and tie correction).
// REQUIRES: both non-empty.
double MannWhitneyP(const Histogram& a, const Histogram& b);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_REGRESSION_H_

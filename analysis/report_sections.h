// SPDX-License-Identifier: Apache-2.0
// The sections a report is made of, each an HTML fragment (a heading and
// its plots or tables); report.cc puts them in order. Internal to the
// analysis library. `names` holds one series name per run, in run order.
#ifndef COLLBENCH_ANALYSIS_REPORT_SECTIONS_H_
#define COLLBENCH_ANALYSIS_REPORT_SECTIONS_H_

#include <string>
#include <vector>

#include "analysis/run_set.h"

namespace collbench::report_internal {

// Latency and bus bandwidth (algorithm bandwidth where no run has a bus
// bandwidth: point-to-point) against size, one series per run, under an
// <h2> saying `heading` (text). The bus bandwidth plot draws each run's
// references (limit, expected, floor) where its results carry them.
std::string SizePlots(const std::vector<RunWithResults>& runs,
                      const std::vector<std::string>& names, const std::string& heading);

// The latency distribution (CDF from the stored histograms) at the
// smallest, a middle and the largest size, one series per run.
std::string DistributionPlots(const std::vector<RunWithResults>& runs,
                              const std::vector<std::string>& names);

// Per run and size: each rank's mean, p50, p99 and host, the slowest rank
// and straggler flags.
std::string PerRankSection(const std::vector<RunWithResults>& runs,
                           const std::vector<std::string>& names);

// A run's results, one row per size, with the share of its path's limit
// and of the published expected value ("-" where unknown), the latter
// coloured by its verdict; each with its derivation as a tooltip.
std::string ResultsTable(const RunWithResults& run);

// Each run's mean against the first run's, per size, with the 95%
// intervals' verdict (significant or not).
std::string RatioTable(const std::vector<RunWithResults>& runs,
                       const std::vector<std::string>& names);

// The spec and environment fields that differ between the runs (and, in a
// line, those all share); for one run, all of them.
std::string EnvironmentSection(const std::vector<RunWithResults>& runs,
                               const std::vector<std::string>& names);

}  // namespace collbench::report_internal

#endif  // COLLBENCH_ANALYSIS_REPORT_SECTIONS_H_

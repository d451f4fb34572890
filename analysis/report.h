// SPDX-License-Identifier: Apache-2.0
// Reports (docs/design/workflows.md#reports): one self-contained HTML page for a run, for several
// runs compared, or for a stored suite run — what `collbench report`
// writes to a file and what the coordinator serves under /ui/. See
// analysis/html.h for what "self-contained" promises.
//
// A runs report holds: a summary of each run; latency and bus bandwidth
// against size (one series per run, named by DistinctConfigNames; the
// results' limit and expected value as dashed reference lines); the
// latency distribution at three sizes; for several runs, each run's mean
// against the first's per size; each run's results, with their % of limit
// and % of expected (ResultReferences); the per-rank view; the spec and
// environment fields that differ. A suite report holds the
// suite's tables with agreement marked and skipped cells named, then its
// runs' plots per operation.
//
// Pure functions of their arguments; safe from any thread.
#ifndef COLLBENCH_ANALYSIS_REPORT_H_
#define COLLBENCH_ANALYSIS_REPORT_H_

#include <string>
#include <vector>

#include "analysis/html.h"
#include "analysis/run_set.h"
#include "analysis/suite.h"

namespace collbench {

// "runs/ab12 allreduce" for one run, "allreduce: 3 runs compared" for more.
std::string RunsReportTitle(const std::vector<RunWithResults>& runs);

// The report's body: every section above, without the page around it (the
// coordinator's live page swaps this part as results arrive). With no runs,
// a line saying so.
std::string RunsReportBody(const std::vector<RunWithResults>& runs);

// `suite_run` is the suite run's id; `runs` its stored runs.
std::string SuiteReportTitle(const std::string& suite_run, const SuiteView& view);
std::string SuiteReportBody(const std::string& suite_run, const SuiteView& view,
                            const std::vector<RunWithResults>& runs);

// Whole pages, as the report file holds them.
std::string RunsReport(const std::vector<RunWithResults>& runs);
std::string SuiteReport(const std::string& suite_run, const SuiteView& view,
                        const std::vector<RunWithResults>& runs);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_REPORT_H_

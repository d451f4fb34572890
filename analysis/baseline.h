// SPDX-License-Identifier: Apache-2.0
// Baselines and checks (docs/design/workflows.md#baselines-and-checks): a
// baseline keeps, per configuration, the latency histogram a set of runs
// measured; a check compares new runs with it like with like
// (analysis/regression.h) and says, per row, ok, faster, slower or regression,
// and what in the environment changed.
//
// A configuration is every field that defines what was measured: the
// operation, its size, element type, reduction, root and in-place flag,
// the MPI library, backend, effective transport, placement, rank count,
// memory kind, sync mode, forced algorithm and tuning environment, and the
// workers' class (their `class` label, e.g. an instance type). Two results
// are compared only when every field is equal; a configuration on one side
// only is listed, never dropped. Library versions, the NCCL version and
// the hosts are the environment, not the key: a library upgrade is exactly
// what a check should compare across, and it names them when they differ.
#ifndef COLLBENCH_ANALYSIS_BASELINE_H_
#define COLLBENCH_ANALYSIS_BASELINE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/regression.h"
#include "analysis/run_set.h"
#include "common/histogram.h"

namespace collbench {

// (field, value) pairs in a fixed order; equal keys are one configuration.
using ConfigKey = std::vector<std::pair<std::string, std::string>>;

ConfigKey KeyOf(const v1::Run& run, const v1::SizeResult& result);
// "allreduce 1K float32 sum openmpi/mpi/tcp spread 2 ranks …": the fields
// that matter to a person, in one line.
std::string KeyText(const ConfigKey& key);

// One configuration of a baseline: the merged histogram of every result of
// it in the baseline's runs, and the run it came from first (for the
// environment comparison).
struct BaselineEntry {
  ConfigKey key;
  Histogram histogram;
  v1::Run run;  // the first run with this configuration (results stripped)
  int results = 0;
};

// The entries of a baseline made of `runs` (successful ones; a result
// without a histogram is left out), by key. InvalidArgument when no result
// has a histogram.
absl::StatusOr<std::vector<BaselineEntry>> BaselineFrom(const std::vector<RunWithResults>& runs);

struct CheckRow {
  ConfigKey key;
  Comparison comparison;
  std::string baseline_run;
  std::string candidate_run;
  // What differs between the two runs' environments: library versions,
  // NCCL version, environment fingerprint, worker set.
  std::vector<std::string> environment;
};

struct CheckResult {
  std::vector<CheckRow> rows;           // configurations on both sides
  std::vector<ConfigKey> only_baseline;  // measured then, not now
  std::vector<ConfigKey> only_candidate;  // measured now, not then
  bool regressed = false;               // any row's verdict is "regression"
};

// `candidate`'s results against `baseline`, configuration by configuration
// (a configuration measured by several candidate runs is merged first).
CheckResult Check(const std::vector<BaselineEntry>& baseline,
                  const std::vector<RunWithResults>& candidate, const CompareOptions& options);

// Human lines naming what differs between how two runs ran
// ("mpi_version: 4.1.4 -> 4.1.5", "workers: a,b -> a,c").
std::vector<std::string> EnvironmentDifferences(const v1::Run& baseline, const v1::Run& candidate);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_BASELINE_H_

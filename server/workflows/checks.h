// SPDX-License-Identifier: Apache-2.0
// Baselines and checks as API resources
// (docs/design/workflows.md#baselines-and-checks): the analysis of
// analysis/baseline.h between its structs and the collbench.v1 messages a
// baseline is stored as and a check's output is returned as. Plain functions of
// protos: tests drive them without a coordinator.
#ifndef COLLBENCH_SERVER_WORKFLOWS_CHECKS_H_
#define COLLBENCH_SERVER_WORKFLOWS_CHECKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/run_set.h"
#include "collbench/v1/baseline.pb.h"
#include "collbench/v1/workflow.pb.h"

namespace collbench::workflows {

// "COLLECTION/ID" from "ID" or "COLLECTION/ID" (baselines, schedules);
// InvalidArgument naming `field` and the `noun` unless ID is 1-63 of
// [a-z0-9.-], starting with a letter or digit.
absl::StatusOr<std::string> ResourceName(absl::string_view text, absl::string_view collection,
                                         absl::string_view noun, absl::string_view field);

// ResourceName of a baseline.
absl::StatusOr<std::string> BaselineName(absl::string_view text, absl::string_view field);

// A baseline named `name` of `runs` (their successful results with
// histograms, merged per configuration). InvalidArgument when none has one.
absl::StatusOr<v1::Baseline> MakeBaseline(const std::string& name,
                                          const std::vector<RunWithResults>& runs);

// InvalidArgument for a threshold outside [0, 10) or an alpha outside
// [0, 1) (0 picks the defaults: 5% and 0.01).
absl::Status ValidateCheckOptions(double threshold, double alpha);

// `runs` checked against `baseline`: rows, one-sided configurations,
// regressions and the environment differences every regressed row shares.
// FailedPrecondition when no configuration is on both sides (nothing was
// compared: a check that passes by comparing nothing would pass a broken
// run).
// InvalidArgument for a threshold < 0 or an alpha outside (0, 1) (0 picks
// the defaults: 5% and 0.01).
absl::StatusOr<v1::CheckOutput> CheckAgainst(const v1::Baseline& baseline,
                                             const std::vector<RunWithResults>& runs,
                                             double threshold, double alpha);

// The check as a table (one row per configuration, regressions first) for
// the CLI, the workflow page and the report.
v1::OutputTable CheckTable(const v1::CheckOutput& check);

}  // namespace collbench::workflows

#endif  // COLLBENCH_SERVER_WORKFLOWS_CHECKS_H_

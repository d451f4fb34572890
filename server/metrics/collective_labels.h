// SPDX-License-Identifier: Apache-2.0
// The labels of the collective series (collbench_collective_*,
// docs/design/observability.md#collective-series): every field that defines a
// configuration is a label, so two configurations never share a series, plus
// the operator's dimensions to follow a node pool or a team: an allow-listed
// set of run labels and the node pool of the run's workers.
//
// The label set, and why each is bounded:
//   operation, backend, mpi, transport, placement, sync, memory, dtype,
//   redop, in_place     the spec's names, canonical lower case; each a
//                       small closed set (validation refuses others)
//   ranks, root         decimal; at most the fleet's slots
//   size_bytes          decimal; only sizes the run's spec names
//                       (api/result_bounds.h)
//   algorithm           the algorithm the run's environment forces
//                       (MpiFlavor::ForcedAlgorithm), "default" otherwise;
//                       the library's closed list
//   env                 the rest of the run's tuning environment as
//                       "KEY=VALUE,..." sorted, "" when none; validated
//                       keys and value grammars (api/tuning_env.h)
//   pool                the run's workers' value of the worker label
//                       --metric-pool-label names (default "pool"):
//                       "mixed" when they differ, "" when none has it;
//                       one value per node pool the operator labels
//   label_<key>         one per allow-listed run label key
//                       (--metric-run-labels), its value sanitized; at
//                       most kMaxRunLabelValues distinct values per key,
//                       later ones read "other"
// No label carries a run id. A series exists per configuration measured,
// so the series grow with the configurations kept in the store, never with
// the number of runs or results.
#ifndef COLLBENCH_SERVER_METRICS_COLLECTIVE_LABELS_H_
#define COLLBENCH_SERVER_METRICS_COLLECTIVE_LABELS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

using MetricLabels = std::map<std::string, std::string>;

// Distinct values one run-label metric label takes before "other".
inline constexpr int kMaxRunLabelValues = 64;
// Characters of a run-label value kept (after sanitizing).
inline constexpr int kMaxRunLabelValueChars = 63;

struct CollectiveLabelOptions {
  // Run label keys (RunSpec.labels) exposed as `label_<key>` ('-' as '_').
  std::vector<std::string> run_labels;
  // The worker label (Inventory.labels) that names a worker's node pool;
  // empty: no `pool` label.
  std::string pool_label = "pool";
};

// OK, or InvalidArgument naming the flag (--metric-run-labels,
// --metric-pool-label) and the key: a run label key must be one the API
// accepts ([a-z0-9_-], 1-63 characters), given once, and not map to the
// label name of another ("a-b" and "a_b"); the pool label a worker label
// key (common/worker_labels.h).
absl::Status ValidateCollectiveLabelOptions(const CollectiveLabelOptions& options);

// "label_" + key with '-' as '_': a valid Prometheus label name for any
// key ValidateCollectiveLabelOptions accepts.
std::string RunLabelName(absl::string_view key);

// A run label's value as a label value: characters outside
// [A-Za-z0-9._-] become '_', cut to kMaxRunLabelValueChars.
std::string SanitizeLabelValue(absl::string_view value);

// The node pool of a scheduled run: its workers' value of `pool_label`
// (RankHost.worker_labels), "mixed" when they differ (or only some have
// it), "" when none has it or `pool_label` is empty.
std::string RunPool(const v1::Run& run, absl::string_view pool_label);

// The labels of a configuration's fields for one result of a run with
// `spec`: every label above but pool and the run labels.
MetricLabels ConfigurationLabels(const v1::RunSpec& spec, const v1::SizeResult& result);

// Every label of one result. Not thread-safe: the caller serializes.
class CollectiveLabeler {
 public:
  explicit CollectiveLabeler(CollectiveLabelOptions options);

  // ConfigurationLabels plus `pool` (when a pool label is configured) and
  // the allow-listed run labels ("" for a run without the key).
  MetricLabels Labels(const v1::RunSpec& spec, const std::string& pool,
                      const v1::SizeResult& result);

 private:
  // The value a run label gets: sanitized, "other" past the bound.
  std::string RunLabelValue(const std::string& key, absl::string_view raw);

  const CollectiveLabelOptions options_;
  std::map<std::string, std::set<std::string>> run_label_values_;  // by key
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_COLLECTIVE_LABELS_H_

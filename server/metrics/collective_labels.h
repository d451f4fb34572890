// SPDX-License-Identifier: Apache-2.0
// The labels of the collective series (collbench_collective_*,
// docs/design/observability.md#collective-series): every field that defines a
// configuration is a label, so two configurations never share a series, plus
// the operator's dimensions to follow a node pool or a team: an allow-listed
// set of run labels and the node pool of the run's workers.
//
// The label set, and why each takes a bounded set of values
// (docs/reference/metrics.md#label-values):
//   operation, backend, mpi, transport, placement, sync, memory, dtype,
//   redop, in_place     the spec's names, canonical lower case; each a
//                       small closed set (validation refuses others)
//   ranks, root         BoundedCountLabel: decimal up to kExactCountLabels,
//                       above it the power of two at or above the value
//                       (at most 90 values each); root "none" for an
//                       operation without one
//   size_bytes          BoundedCountLabel of the result's size: a sweep's
//                       sizes may be any integers (an explicit list, or
//                       min..max by any factor), so the label is a bucket:
//                       exact for every power of two (the default sweep,
//                       any factor-2 sweep from a power of two), else the
//                       power of two at or above (at most 122 values); only
//                       sizes the run's spec names (api/result_bounds.h)
//   algorithm           the algorithm the run's environment forces
//                       (MpiFlavor::ForcedAlgorithm), "default" otherwise;
//                       the library's closed list
//   env                 the rest of the run's tuning environment as
//                       "KEY=VALUE,..." sorted, "" when none; at most
//                       kMaxEnvLabelValues distinct environments held at
//                       once (validated values are still any numbers),
//                       others read "other"
//   pool                the run's workers' value of the worker label
//                       --metric-pool-label names (default "pool"):
//                       "mixed" when they differ, "" when none has it;
//                       one value per node pool the operator labels
//   label_<key>         one per allow-listed run label key
//                       (--metric-run-labels), its value sanitized; at
//                       most kMaxRunLabelValues distinct values per key
//                       held at once, later ones read "other"
// No label carries a run id. A series exists per configuration measured,
// so the series grow with the configurations kept in the store, never with
// the number of runs or results.
#ifndef COLLBENCH_SERVER_METRICS_COLLECTIVE_LABELS_H_
#define COLLBENCH_SERVER_METRICS_COLLECTIVE_LABELS_H_

#include <cstdint>
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
// Distinct tuning environments the env label takes before "other".
inline constexpr int kMaxEnvLabelValues = 64;
// Characters of a run-label value kept (after sanitizing).
inline constexpr int kMaxRunLabelValueChars = 63;
// Counts (ranks, root, size_bytes) up to this are labels as they are.
inline constexpr uint64_t kExactCountLabels = 64;

struct CollectiveLabelOptions {
  // Run label keys (RunSpec.labels) exposed as `label_<key>` ('-' as '_').
  std::vector<std::string> run_labels;
  // The worker label (Inventory.labels) that names a worker's node pool;
  // empty: no `pool` label.
  std::string pool_label = "pool";
  // The most Prometheus series the collective families may hold
  // (--max-metric-series), each label set counted at its most
  // (kSeriesPerLabelSet, coordinator_metrics.h); a result that would make a label set past it is
  // stored but not exported. 0: no limit.
  int max_series = 50000;
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

// `value` as a bounded label: decimal up to kExactCountLabels, else the
// power of two at or above it (2^63 for anything above 2^63), the upper
// edge of its bucket as Prometheus' `le` reads.
std::string BoundedCountLabel(uint64_t value);

// The labels of a configuration's fields for one result of a run with
// `spec`: every label above but pool and the run labels, env unfolded.
MetricLabels ConfigurationLabels(const v1::RunSpec& spec, const v1::SizeResult& result);

// The labels ConfigurationLabels takes from the result (operation,
// size_bytes, dtype, redop, root, sync): a series' labels are its run's
// configuration (CollectiveLabeler::ConfigurationOf) with these over it.
MetricLabels ResultFieldLabels(const v1::RunSpec& spec, const v1::SizeResult& result);

// The configuration labels of runs, with the labels whose values are held
// first come (env and the run labels) folded to their bounded sets. The
// caller holds a configuration's values for as long as it keeps the
// configuration (Hold, Release), so the values of removed configurations
// are free for new ones. Not thread-safe: the caller serializes.
class CollectiveLabeler {
 public:
  explicit CollectiveLabeler(CollectiveLabelOptions options);

  // ConfigurationLabels of `spec` (with no result's fields) plus `pool`
  // (when a pool label is configured) and the allow-listed run labels (""
  // for a run without the key); env and the run labels "other" when their
  // value is not held and their bound is reached.
  MetricLabels ConfigurationOf(const v1::RunSpec& spec, const std::string& pool) const;
  // Holds / releases the env and run-label values of `configuration` (a
  // ConfigurationOf), once per configuration kept.
  void Hold(const MetricLabels& configuration);
  void Release(const MetricLabels& configuration);

 private:
  // The value a first-come label gets: `value` when held or below `bound`,
  // "other" past it.
  std::string FoldedValue(const std::string& label, std::string value, int bound) const;

  const CollectiveLabelOptions options_;
  // Label name (env, label_<key>) -> held value -> configurations holding it.
  std::map<std::string, std::map<std::string, int>> held_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_COLLECTIVE_LABELS_H_

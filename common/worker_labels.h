// SPDX-License-Identifier: Apache-2.0
// Worker labels: KEY=VALUE facts an operator gives a worker
// (`collbench-worker --label link=tbf-1gbit`) that it cannot discover, such
// as how its host is linked to the others. They travel in the worker's
// inventory; suites match a cell's needs against them.
//
// A key is 1–63 characters of [a-z0-9._-] starting with a letter or digit,
// optionally after a DNS prefix and a '/' as a Kubernetes node label's key
// has (topology.kubernetes.io/zone: a host's rack or zone, which
// topology-aware hunts read); a value is 1–63 characters of [A-Za-z0-9._-]. The same rule holds on
// the worker (its flag) and on the coordinator (its registration), so a label is one token in
// `collbench workers --long`, in the store and in JSON.
#ifndef COLLBENCH_COMMON_WORKER_LABELS_H_
#define COLLBENCH_COMMON_WORKER_LABELS_H_

#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

// The label that declares a worker's link rate (common/units.h
// ParseBitRate: "link-rate=25gbit"); the roofline of the network path
// prefers it to the rate sysfs reports.
inline constexpr char kLinkRateLabel[] = "link-rate";
// The label that names a worker's hardware class for baselines (an
// instance type, a SKU): part of every configuration key.
inline constexpr char kClassLabel[] = "class";

// OK, or InvalidArgument saying what is wrong with `key` or `value`.
absl::Status ValidateWorkerLabel(absl::string_view key, absl::string_view value);

// "KEY=VALUE" (a --label flag) into its key and value, both validated.
absl::StatusOr<std::pair<std::string, std::string>> ParseWorkerLabel(absl::string_view text);

// "k1=v1,k2=v2" in key order; "" for none.
std::string FormatWorkerLabels(const std::map<std::string, std::string>& labels);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_WORKER_LABELS_H_

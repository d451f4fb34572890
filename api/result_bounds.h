// SPDX-License-Identifier: Apache-2.0
// What a run's spec can make the engine report (docs/design/security.md#bounds): the
// coordinator refuses results beyond it and makes metric series only for
// the sizes it names, so a worker cannot grow the store or the metrics
// without limit by reporting made-up results.
//
// The engine reports one result per (size, dtype, redop) of an operation
// sweep (`--dtype all` / `--redop all` multiply), one per size for the
// parameter-server scenario and one per rank count for gradient replay.
// The bounds below are never below what a real run reports.
//
// Thread safety: pure functions.
#ifndef COLLBENCH_API_RESULT_BOUNDS_H_
#define COLLBENCH_API_RESULT_BOUNDS_H_

#include <cstdint>
#include <set>

#include "collbench/v1/run.pb.h"

namespace collbench {

struct ResultBounds {
  // The most results the run can report.
  int64_t max_results = 0;
  // Sizes (bytes) a result of the run may carry: the sweep's sizes and each
  // rounded down to a whole number of elements of every dtype. Empty when
  // the run's sizes are not known from the spec alone (scenarios that size
  // their messages from a model); see max_distinct_sizes.
  std::set<uint64_t> sizes;
  // The most distinct sizes the run's results can carry.
  int64_t max_distinct_sizes = 0;
};

// The bounds for `spec` (a validated spec; an unparsable one gets the
// engine's own maximum sweep so nothing real is refused).
ResultBounds BoundsOfSpec(const v1::RunSpec& spec);

}  // namespace collbench

#endif  // COLLBENCH_API_RESULT_BOUNDS_H_

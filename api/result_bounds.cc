// SPDX-License-Identifier: Apache-2.0
#include "api/result_bounds.h"

#include <algorithm>
#include <vector>

#include "absl/status/statusor.h"
#include "api/convert.h"
#include "engine_spec/options.h"
#include "engine_spec/types.h"

namespace collbench {

ResultBounds BoundsOfSpec(const v1::RunSpec& spec) {
  absl::StatusOr<EngineOptions> options = ParseEngineArgs(EngineArgs(spec));
  const std::vector<uint64_t> sweep =
      options.ok() ? SweepSizes(*options) : std::vector<uint64_t>{};
  const int64_t sizes =
      options.ok() ? std::max<int64_t>(1, sweep.size()) : static_cast<int64_t>(kMaxSweepSizes);
  const bool all_dtypes = !options.ok() || options->all_dtypes;
  const bool all_redops = !options.ok() || options->all_redops;
  const int64_t dtypes = all_dtypes ? static_cast<int64_t>(AllDataTypes().size()) : 1;
  const int64_t redops = all_redops ? static_cast<int64_t>(AllReduceOps().size()) : 1;
  // Gradient replay reports once per rank count, at most the run's ranks.
  const int64_t rank_counts = std::max<int64_t>(1, spec.ranks());
  ResultBounds bounds;
  bounds.max_results = (sizes + rank_counts) * dtypes * redops;
  bounds.max_distinct_sizes = (sizes + rank_counts) * dtypes;
  if (!options.ok() || (!options->scenario.empty() && options->scenario != "parameter-server")) {
    return bounds;  // sizes come from a model: only their number is bounded
  }
  for (uint64_t size : sweep) {
    bounds.sizes.insert(size);
    for (DataType dtype : AllDataTypes()) {
      const uint64_t element = ElementSize(dtype);
      if (element > 0) bounds.sizes.insert(size / element * element);
    }
  }
  return bounds;
}

}  // namespace collbench

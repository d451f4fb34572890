// SPDX-License-Identifier: Apache-2.0
#include "server/core/request_bounds.h"

#include <limits>
#include <set>

#include "absl/strings/str_cat.h"

namespace collbench {

absl::Status RequestBounds::CheckWorkflowCells(uint64_t cells) {
  const auto limit = static_cast<uint64_t>(options_.max_workflow_cells);
  if (cells <= limit) return absl::OkStatus();
  ++workflow_cells_;
  const std::string count = cells == std::numeric_limits<uint64_t>::max()
                                ? std::string("more than 2^64")
                                : absl::StrCat(cells);
  return absl::InvalidArgumentError(absl::StrCat(
      "spec: the workflow would plan ", count, " cells (each list counted once), more than the ",
      limit, " a workflow may have (--max-workflow-cells); split it into smaller workflows"));
}

absl::StatusOr<std::vector<std::string>> RequestBounds::DistinctRuns(
    const std::vector<std::string>& names, absl::string_view field) {
  const auto limit = static_cast<size_t>(options_.max_runs_per_request);
  std::vector<std::string> distinct;
  std::set<absl::string_view> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) continue;
    if (distinct.size() == limit) {
      ++runs_per_request_;
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": more than ", limit, " distinct runs named (", names.size(),
                       " given); at most ", limit, " per request (--max-runs-per-request)"));
    }
    distinct.push_back(name);
  }
  return distinct;
}

absl::Status RequestBounds::CheckReportSize(size_t bytes) {
  if (static_cast<int64_t>(bytes) <= options_.max_report_bytes) return absl::OkStatus();
  ++report_size_;
  return absl::ResourceExhaustedError(absl::StrCat(
      "the report's page is ", bytes, " bytes, more than the ", options_.max_report_bytes,
      " a report may store (--max-report-bytes); report on fewer runs"));
}

RequestBoundRejections RequestBounds::rejections() const {
  return {workflow_cells_.load(), runs_per_request_.load(), report_size_.load()};
}

uint64_t SaturatingProduct(const std::vector<uint64_t>& sizes) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t product = 1;
  for (uint64_t size : sizes) {
    if (size == 0) return 0;
    product = product > kMax / size ? kMax : product * size;
  }
  return product;
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// Bounds on the work one request may ask of the coordinator
// (docs/operations/limits.md#workflows-and-run-lists): the cells a matrix,
// suite or sweep workflow plans, the runs one request names (advice,
// report and check workflows, baselines, the /ui/ comparison) and the page
// a report workflow stores. A request is measured before the work it asks
// for is done (a workflow's cells are counted from its lists, not planned),
// so a refusal costs no more than reading the request.
//
// Each refusal is counted by reason (workflow_cells, runs_per_request,
// report_size) for collbench_admission_rejections_total.
//
// Thread safety: every method may be called from any thread.
#ifndef COLLBENCH_SERVER_CORE_REQUEST_BOUNDS_H_
#define COLLBENCH_SERVER_CORE_REQUEST_BOUNDS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

struct RequestBoundOptions {
  // Cells of one workflow, counted after each list's repeats are dropped
  // (--max-workflow-cells). The largest built-in suite profile plans 144
  // cells and the default matrix 12; a cell is at least one run of the
  // fleet's time, so 1024 cells are hours to days of it, while their plan
  // is a few MB of the coordinator's memory.
  int max_workflow_cells = 1024;
  // Distinct runs one request names (--max-runs-per-request): a comparison
  // page of 256 runs is already more than a person reads, and ~5 MB.
  int max_runs_per_request = 256;
  // A report workflow's stored page; beyond it the workflow fails naming
  // the limit (--max-report-bytes). 256 runs' report is about 5 MB.
  int64_t max_report_bytes = int64_t{32} << 20;
};

// Refusals since the start, by reason.
struct RequestBoundRejections {
  int64_t workflow_cells = 0;
  int64_t runs_per_request = 0;
  int64_t report_size = 0;
};

class RequestBounds {
 public:
  explicit RequestBounds(RequestBoundOptions options = {}) : options_(options) {}

  const RequestBoundOptions& options() const { return options_; }

  // OK when a workflow of `cells` cells may be planned; InvalidArgument
  // naming the count, the limit and its flag (counted) otherwise.
  absl::Status CheckWorkflowCells(uint64_t cells);

  // `names` without repeats, each kept where first seen; InvalidArgument
  // naming `field`, the count, the limit and its flag (counted) when more
  // distinct names than the limit remain.
  absl::StatusOr<std::vector<std::string>> DistinctRuns(const std::vector<std::string>& names,
                                                        absl::string_view field);

  // OK when a report page of `bytes` may be stored; ResourceExhausted
  // naming the size, the limit and its flag (counted) otherwise.
  absl::Status CheckReportSize(size_t bytes);

  RequestBoundRejections rejections() const;

 private:
  const RequestBoundOptions options_;
  std::atomic<int64_t> workflow_cells_{0};
  std::atomic<int64_t> runs_per_request_{0};
  std::atomic<int64_t> report_size_{0};
};

// The product of `sizes`, saturating at UINT64_MAX (a count to compare with
// a bound, not to allocate by).
uint64_t SaturatingProduct(const std::vector<uint64_t>& sizes);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_REQUEST_BOUNDS_H_

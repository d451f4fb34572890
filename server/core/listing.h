// SPDX-License-Identifier: Apache-2.0
// Paging and filtering of the Coordinator's list methods, shared by the
// gRPC service and the REST API so both answer a list request the same way
// (docs/design/run-lifecycle.md#api: list methods page with page_size / page_token).
//
// Thread safety: stateless; safe wherever the RunManager is.
#ifndef COLLBENCH_SERVER_CORE_LISTING_H_
#define COLLBENCH_SERVER_CORE_LISTING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collbench/v1/coordinator.pb.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"
#include "server/core/run_manager.h"
#include "server/core/fleet.h"

namespace collbench {

// Workers per page when a ListWorkers request asks for 0.
inline constexpr int kDefaultWorkerPageSize = 100;

// ListRunsRequest.filter: empty (every run) or "state=NAME" with NAME a
// RunState such as RUNNING. InvalidArgument naming `filter` otherwise.
absl::StatusOr<v1::RunState> ParseRunFilter(absl::string_view filter);

// One page of runs, newest first: the filter parsed as above, page_size and
// page_token as Store::ListRuns takes them (0: the default size; negative
// or a foreign token: InvalidArgument naming the field).
absl::StatusOr<v1::ListRunsResponse> ListRunsPage(RunManager& manager,
                                                  const v1::ListRunsRequest& request);

// One page of `workers` (already in listing order). page_size 0 means
// kDefaultWorkerPageSize; the token is the index of the page's first worker,
// as returned in next_page_token. A negative page_size or a token that is
// not such an index is InvalidArgument naming the field.
absl::StatusOr<v1::ListWorkersResponse> PageWorkers(std::vector<v1::Worker> workers,
                                                    const v1::ListWorkersRequest& request);

// PageWorkers over fleet.ListWorkers(), converting only the page.
absl::StatusOr<v1::ListWorkersResponse> ListWorkersPage(Fleet& fleet,
                                                        const v1::ListWorkersRequest& request);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_LISTING_H_

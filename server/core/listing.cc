// SPDX-License-Identifier: Apache-2.0
#include "server/core/listing.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace collbench {

absl::StatusOr<v1::RunState> ParseRunFilter(absl::string_view filter) {
  v1::RunState state = v1::RUN_STATE_UNSPECIFIED;
  if (filter.empty()) return state;
  constexpr absl::string_view kPrefix = "state=";
  if (!absl::StartsWith(filter, kPrefix) ||
      !v1::RunState_Parse(std::string(filter.substr(kPrefix.size())), &state) ||
      state == v1::RUN_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("filter: \"", filter,
                     "\" is not one of state=QUEUED|SCHEDULED|RUNNING|SUCCEEDED|FAILED|CANCELLED"));
  }
  return state;
}

absl::StatusOr<v1::ListRunsResponse> ListRunsPage(RunManager& manager,
                                                  const v1::ListRunsRequest& request) {
  if (request.page_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must not be negative, got ", request.page_size()));
  }
  absl::StatusOr<v1::RunState> state = ParseRunFilter(request.filter());
  if (!state.ok()) return state.status();
  absl::StatusOr<Store::RunPage> page =
      manager.ListRuns(request.page_size(), request.page_token(), *state);
  if (!page.ok()) return page.status();
  v1::ListRunsResponse response;
  for (v1::Run& run : page->runs) *response.add_runs() = std::move(run);
  response.set_next_page_token(std::move(page->next_page_token));
  return response;
}

namespace {

// The first index and the size of the page a ListWorkers request asks for.
struct WorkerRange {
  size_t start = 0;
  size_t size = 0;
};

absl::StatusOr<WorkerRange> RangeOf(const v1::ListWorkersRequest& request) {
  if (request.page_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must not be negative, got ", request.page_size()));
  }
  WorkerRange range;
  if (!request.page_token().empty() && !absl::SimpleAtoi(request.page_token(), &range.start)) {
    return absl::InvalidArgumentError("page_token: not a token from ListWorkers");
  }
  range.size = request.page_size() > 0 ? request.page_size() : kDefaultWorkerPageSize;
  return range;
}

// The response for `page`, the workers from `start` on of `total`.
v1::ListWorkersResponse Respond(std::vector<v1::Worker> page, size_t start, size_t total) {
  v1::ListWorkersResponse response;
  for (v1::Worker& worker : page) *response.add_workers() = std::move(worker);
  const size_t end = start + page.size();
  if (start < total && end < total) response.set_next_page_token(std::to_string(end));
  return response;
}

}  // namespace

absl::StatusOr<v1::ListWorkersResponse> PageWorkers(std::vector<v1::Worker> workers,
                                                    const v1::ListWorkersRequest& request) {
  absl::StatusOr<WorkerRange> range = RangeOf(request);
  if (!range.ok()) return range.status();
  std::vector<v1::Worker> page;
  // Past the end: an empty last page.
  for (size_t i = range->start; i < workers.size() && page.size() < range->size; ++i) {
    page.push_back(std::move(workers[i]));
  }
  return Respond(std::move(page), range->start, workers.size());
}

absl::StatusOr<v1::ListWorkersResponse> ListWorkersPage(Fleet& fleet,
                                                        const v1::ListWorkersRequest& request) {
  absl::StatusOr<WorkerRange> range = RangeOf(request);
  if (!range.ok()) return range.status();
  WorkerDirectory::Page page = fleet.ListWorkers(range->start, range->size);
  return Respond(std::move(page.workers), range->start, page.total);
}

}  // namespace collbench

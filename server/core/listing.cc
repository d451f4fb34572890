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

absl::StatusOr<v1::ListWorkersResponse> PageWorkers(std::vector<v1::Worker> workers,
                                                    const v1::ListWorkersRequest& request) {
  if (request.page_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must not be negative, got ", request.page_size()));
  }
  size_t start = 0;
  if (!request.page_token().empty() && !absl::SimpleAtoi(request.page_token(), &start)) {
    return absl::InvalidArgumentError("page_token: not a token from ListWorkers");
  }
  const size_t size = request.page_size() > 0 ? request.page_size() : kDefaultWorkerPageSize;
  v1::ListWorkersResponse response;
  if (start >= workers.size()) return response;  // past the end: an empty last page
  const size_t end = workers.size() - start > size ? start + size : workers.size();
  for (size_t i = start; i < end; ++i) *response.add_workers() = std::move(workers[i]);
  if (end < workers.size()) response.set_next_page_token(std::to_string(end));
  return response;
}

absl::StatusOr<v1::ListWorkersResponse> ListWorkersPage(RunManager& manager,
                                                        const v1::ListWorkersRequest& request) {
  return PageWorkers(manager.ListWorkers(), request);
}

}  // namespace collbench

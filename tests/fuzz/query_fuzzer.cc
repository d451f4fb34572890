// SPDX-License-Identifier: Apache-2.0
// HTTP query parameters and page tokens (server/api, server/core/listing,
// server/store): the query string of a list request, as the HTTP server
// splits and decodes it, then page_size, page_token and filter through the
// same functions the list handlers use, against a store holding a few runs
// and a list of workers. Every refusal is InvalidArgument naming the
// parameter; an accepted page is no larger than asked, and its next-page
// token is accepted in turn.
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collbench/v1/coordinator.pb.h"
#include "server/api/rest_json.h"
#include "server/core/listing.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"
#include "tests/fuzz/fuzz_check.h"

namespace collbench {
namespace {

Store& StoreWithRuns() {
  static Store* store = [] {
    Store* s = NewMemoryStore().release();
    for (int i = 0; i < 7; ++i) {
      v1::Run run;
      run.set_name(absl::StrCat("runs/r", i));
      run.set_state(i % 2 == 0 ? v1::QUEUED : v1::SUCCEEDED);
      run.mutable_create_time()->set_seconds(1000 + i / 2);
      FUZZ_CHECK(s->CreateRun(run).ok(), run.name());
    }
    return s;
  }();
  return *store;
}

void CheckRefusal(const absl::Status& status, absl::string_view parameter) {
  FUZZ_CHECK(absl::IsInvalidArgument(status), status.ToString());
  FUZZ_CHECK(absl::StartsWith(status.message(), parameter), status.ToString());
}

// The parameters of `query` that a route taking `names` gets (the router
// refuses the others before any handler runs).
std::map<std::string, std::string> Taken(const std::map<std::string, std::string>& query,
                                         std::initializer_list<absl::string_view> names) {
  std::map<std::string, std::string> taken;
  for (absl::string_view name : names) {
    auto it = query.find(std::string(name));
    if (it != query.end()) taken.insert(*it);
  }
  return taken;
}

void ListRuns(const std::map<std::string, std::string>& query) {
  v1::ListRunsRequest list;
  const absl::Status decoded =
      QueryToProto(Taken(query, {"page_size", "page_token", "filter"}), &list);
  if (!decoded.ok()) return CheckRefusal(decoded, "page_size");
  const int32_t page_size = list.page_size();
  const absl::StatusOr<v1::RunState> state = ParseRunFilter(list.filter());
  if (!state.ok()) return CheckRefusal(state.status(), "filter");
  const std::string token = list.page_token();
  absl::StatusOr<Store::RunPage> page = StoreWithRuns().ListRuns(page_size, token, *state);
  if (!page.ok()) {
    return CheckRefusal(page.status(), page_size < 0 ? "page_size" : "page_token");
  }
  const size_t asked = page_size == 0 ? Store::kDefaultPageSize : page_size;
  FUZZ_CHECK(page->runs.size() <= asked, "a page of " + std::to_string(page->runs.size()));
  if (!page->next_page_token.empty()) {
    FUZZ_CHECK(StoreWithRuns().ListRuns(page_size, page->next_page_token, *state).ok(),
               "next_page_token " + page->next_page_token + " refused");
  }
  // A token that decodes is one EncodePageToken writes back the same way.
  if (absl::StatusOr<store_internal::RunPosition> position =
          store_internal::DecodePageToken(token, *state);
      position.ok()) {
    const absl::StatusOr<store_internal::RunPosition> again = store_internal::DecodePageToken(
        store_internal::EncodePageToken(*position, *state), *state);
    FUZZ_CHECK(again.ok() && again->name == position->name &&
                   again->create_time_ns == position->create_time_ns,
               "page token " + token + " does not round-trip");
  }
}

void ListWorkers(const std::map<std::string, std::string>& query) {
  v1::ListWorkersRequest list;
  const absl::Status decoded = QueryToProto(Taken(query, {"page_size", "page_token"}), &list);
  if (!decoded.ok()) return CheckRefusal(decoded, "page_size");
  const int32_t page_size = list.page_size();
  std::vector<v1::Worker> workers(5);
  for (size_t i = 0; i < workers.size(); ++i) workers[i].set_name(absl::StrCat("workers/w", i));
  const absl::StatusOr<v1::ListWorkersResponse> page = PageWorkers(workers, list);
  if (!page.ok()) {
    return CheckRefusal(page.status(), page_size < 0 ? "page_size" : "page_token");
  }
  const size_t asked = page_size == 0 ? kDefaultWorkerPageSize : page_size;
  FUZZ_CHECK(page->workers_size() <= static_cast<int>(asked), "page too large");
  if (!page->next_page_token().empty()) {
    list.set_page_token(page->next_page_token());
    FUZZ_CHECK(PageWorkers(workers, list).ok(), "next_page_token refused");
  }
}

void FuzzOne(absl::string_view query) {
  const absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      ParseQueryString(query);
  if (!params.ok()) return CheckRefusal(params.status(), "query");
  // As the REST router builds a request: snake_case names, each at most once.
  std::map<std::string, std::string> parameters;
  for (const auto& [name, value] : *params) parameters.emplace(SnakeCase(name), value);
  ListRuns(parameters);
  ListWorkers(parameters);
}

}  // namespace
}  // namespace collbench

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  collbench::FuzzOne(collbench::fuzz::AsText(data, size));
  return 0;
}

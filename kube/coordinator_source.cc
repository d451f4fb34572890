// SPDX-License-Identifier: Apache-2.0
#include "kube/coordinator_source.h"

#include <string>
#include <utility>

#include "collbench/v1/coordinator.grpc.pb.h"

namespace collbench::kube {
namespace {

constexpr int kPageSize = 1000;

// Calls `method` page by page with `request` (its page size set), handing
// each page to `take`, until the last page or `take` returns false.
template <typename Request, typename Response, typename Method, typename Take>
absl::Status EachPage(CoordinatorClient* client, Method method, Request request, Take take) {
  request.set_page_size(kPageSize);
  for (;;) {
    Response page;
    if (absl::Status s = client->Call(method, request, &page); !s.ok()) return s;
    if (!take(page) || page.next_page_token().empty()) return absl::OkStatus();
    request.set_page_token(page.next_page_token());
  }
}

class GrpcCoordinatorSource final : public CoordinatorSource {
 public:
  GrpcCoordinatorSource(CoordinatorClient* client, int hunts) : client_(client), hunts_(hunts) {}

  absl::StatusOr<CoordinatorView> Read() override {
    CoordinatorView view;
    absl::Status read = EachPage<v1::ListWorkersRequest, v1::ListWorkersResponse>(
        client_, &v1::Coordinator::Stub::ListWorkers, v1::ListWorkersRequest(),
        [&](v1::ListWorkersResponse& page) {
          for (v1::Worker& w : *page.mutable_workers()) view.workers.push_back(std::move(w));
          return true;
        });
    if (!read.ok()) return read;
    v1::ListWorkflowsRequest hunts;
    hunts.set_filter("kind=hunt");
    read = EachPage<v1::ListWorkflowsRequest, v1::ListWorkflowsResponse>(
        client_, &v1::Coordinator::Stub::ListWorkflows, hunts,
        [&](v1::ListWorkflowsResponse& page) {
          for (v1::Workflow& w : *page.mutable_workflows()) {  // newest first
            if (static_cast<int>(view.hunts.size()) >= hunts_) return false;
            if (w.state() == v1::WORKFLOW_SUCCEEDED) view.hunts.push_back(std::move(w));
          }
          return static_cast<int>(view.hunts.size()) < hunts_;
        });
    if (!read.ok()) return read;
    for (const char* state : {"state=SCHEDULED", "state=RUNNING"}) {
      v1::ListRunsRequest runs;
      runs.set_filter(state);
      read = EachPage<v1::ListRunsRequest, v1::ListRunsResponse>(
          client_, &v1::Coordinator::Stub::ListRuns, runs, [&](v1::ListRunsResponse& page) {
            for (v1::Run& r : *page.mutable_runs()) view.active_runs.push_back(std::move(r));
            return true;
          });
      if (!read.ok()) return read;
    }
    return view;
  }

 private:
  CoordinatorClient* const client_;
  const int hunts_;
};

}  // namespace

std::unique_ptr<CoordinatorSource> NewGrpcCoordinatorSource(CoordinatorClient* client, int hunts) {
  return std::make_unique<GrpcCoordinatorSource>(client, hunts);
}

}  // namespace collbench::kube

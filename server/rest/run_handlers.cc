// SPDX-License-Identifier: Apache-2.0
// The /v1/runs routes.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collbench/v1/coordinator.pb.h"
#include "google/protobuf/empty.pb.h"
#include "server/core/listing.h"
#include "server/rest/event_stream.h"
#include "server/rest/handlers.h"
#include "server/rest/rest_json.h"

namespace collbench::rest_handlers {
namespace {

// The resource name of the run in the path.
std::string RunName(const RestRequest& request) { return absl::StrCat("runs/", request.id); }

}  // namespace

RestReply CreateRun(const RestContext& context, const RestRequest& request) {
  v1::CreateRunRequest create;
  if (absl::Status parsed = ProtoFromJson(request.body, /*empty_ok=*/false, &create);
      !parsed.ok()) {
    return ErrorReply(parsed);
  }
  if (!create.has_spec()) return ErrorReply(absl::InvalidArgumentError("spec: is required"));
  return Answer(context.manager->CreateRun(create.spec(), create.request_id(), absl::Now(),
                                           request.caller));
}

RestReply ListRuns(const RestContext& context, const RestRequest& request) {
  absl::StatusOr<int32_t> page_size = QueryInt(request, "page_size");
  if (!page_size.ok()) return ErrorReply(page_size.status());
  v1::ListRunsRequest list;
  list.set_page_size(*page_size);
  list.set_page_token(QueryString(request, "page_token"));
  list.set_filter(QueryString(request, "filter"));
  return Answer(ListRunsPage(*context.manager, list));
}

RestReply GetRun(const RestContext& context, const RestRequest& request) {
  return Answer(context.manager->GetRun(RunName(request)));
}

RestReply CancelRun(const RestContext& context, const RestRequest& request) {
  const std::string name = RunName(request);
  if (absl::Status body = CheckBodyName<v1::CancelRunRequest>(request, name, "run"); !body.ok()) {
    return ErrorReply(body);
  }
  return Answer(context.manager->CancelRun(name, absl::Now()));
}

RestReply DeleteRun(const RestContext& context, const RestRequest& request) {
  const std::string name = RunName(request);
  if (absl::Status body = CheckBodyName<v1::DeleteRunRequest>(request, name, "run"); !body.ok()) {
    return ErrorReply(body);
  }
  if (absl::Status deleted = context.manager->DeleteRun(name); !deleted.ok()) {
    return ErrorReply(deleted);
  }
  return JsonReply(google::protobuf::Empty());
}

RestReply GetRunResults(const RestContext& context, const RestRequest& request) {
  absl::StatusOr<v1::Run> run = context.manager->GetRun(RunName(request));
  if (!run.ok()) return ErrorReply(run.status());
  absl::StatusOr<std::vector<v1::SizeResult>> results = context.manager->GetResults(run->name());
  if (!results.ok()) return ErrorReply(results.status());
  v1::GetRunResultsResponse response;
  *response.mutable_run() = *std::move(run);
  for (v1::SizeResult& result : *results) *response.add_results() = std::move(result);
  return JsonReply(response);
}

RestReply WatchRun(const RestContext& context, const RestRequest& request) {
  absl::StatusOr<std::unique_ptr<WatcherSlot>> slot = AcquireWatcherSlot(context, request);
  if (!slot.ok()) return ErrorReply(slot.status());
  absl::StatusOr<std::shared_ptr<EventStream>> stream =
      EventStream::Open(*context.manager, *context.hub, RunName(request), context.keepalive,
                        context.watchers, *std::move(slot));
  if (!stream.ok()) return ErrorReply(stream.status());
  RestReply reply;
  reply.content_type = "text/event-stream";
  reply.stream = *std::move(stream);
  return reply;
}

}  // namespace collbench::rest_handlers

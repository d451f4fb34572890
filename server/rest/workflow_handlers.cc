// SPDX-License-Identifier: Apache-2.0
// The /v1/workflows routes: thin translations onto WorkflowManager.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collbench/v1/coordinator.pb.h"
#include "google/protobuf/empty.pb.h"
#include "server/core/name_pages.h"
#include "server/rest/handlers.h"
#include "server/rest/rest_json.h"
#include "server/rest/workflow_stream.h"
#include "server/workflows/workflow_manager.h"

namespace collbench::rest_handlers {
namespace {

std::string WorkflowName(const RestRequest& request) {
  return absl::StrCat("workflows/", request.id);
}

// Every workflow route needs the manager; a server built without one
// (tests of the run routes) says so.
const RestReply* NoWorkflows(const RestContext& context) {
  return context.workflows == nullptr ? Unavailable("this server runs no workflows") : nullptr;
}

}  // namespace

RestReply CreateWorkflow(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  v1::CreateWorkflowRequest create;
  if (absl::Status parsed = ProtoFromJson(request.body, /*empty_ok=*/false, &create);
      !parsed.ok()) {
    return ErrorReply(parsed);
  }
  if (!create.has_spec()) return ErrorReply(absl::InvalidArgumentError("spec: is required"));
  return Answer(context.workflows->Create(create, absl::Now(), request.caller));
}

RestReply ListWorkflows(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  absl::StatusOr<int32_t> page_size = QueryInt(request, "page_size");
  if (!page_size.ok()) return ErrorReply(page_size.status());
  absl::StatusOr<WorkflowManager::Page> page = context.workflows->List(
      *page_size, QueryString(request, "page_token"), QueryString(request, "filter"));
  if (!page.ok()) return ErrorReply(page.status());
  v1::ListWorkflowsResponse response;
  for (v1::Workflow& w : page->workflows) *response.add_workflows() = std::move(w);
  response.set_next_page_token(page->next_page_token);
  return JsonReply(response);
}

RestReply GetWorkflow(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  return Answer(context.workflows->Get(WorkflowName(request)));
}

RestReply CancelWorkflow(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  const std::string name = WorkflowName(request);
  if (absl::Status body = CheckBodyName<v1::CancelWorkflowRequest>(request, name, "workflow");
      !body.ok()) {
    return ErrorReply(body);
  }
  return Answer(context.workflows->Cancel(name, absl::Now()));
}

RestReply DeleteWorkflow(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  const std::string name = WorkflowName(request);
  if (absl::Status body = CheckBodyName<v1::DeleteWorkflowRequest>(request, name, "workflow");
      !body.ok()) {
    return ErrorReply(body);
  }
  if (absl::Status deleted = context.workflows->Delete(name); !deleted.ok()) {
    return ErrorReply(deleted);
  }
  return JsonReply(google::protobuf::Empty());
}

RestReply GetWorkflowReport(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  return Answer(context.workflows->Report(WorkflowName(request)));
}

RestReply WatchWorkflow(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  absl::StatusOr<std::unique_ptr<WatcherSlot>> slot = AcquireWatcherSlot(context, request);
  if (!slot.ok()) return ErrorReply(slot.status());
  absl::StatusOr<std::shared_ptr<WorkflowStream>> stream =
      WorkflowStream::Open(*context.workflows, WorkflowName(request), *std::move(slot));
  if (!stream.ok()) return ErrorReply(stream.status());
  RestReply reply;
  reply.content_type = "text/event-stream";
  reply.stream = *std::move(stream);
  return reply;
}

}  // namespace collbench::rest_handlers

namespace collbench::rest_handlers {

// The /v1/baselines routes: baselines live beside the workflows that check
// against them.
RestReply CreateBaseline(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  v1::CreateBaselineRequest create;
  if (absl::Status parsed = ProtoFromJson(request.body, /*empty_ok=*/false, &create);
      !parsed.ok()) {
    return ErrorReply(parsed);
  }
  return Answer(context.workflows->CreateBaseline(create, absl::Now(), request.caller));
}

RestReply ListBaselines(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  absl::StatusOr<int32_t> page_size = QueryInt(request, "page_size");
  if (!page_size.ok()) return ErrorReply(page_size.status());
  absl::StatusOr<std::vector<v1::Baseline>> all = context.workflows->ListBaselines();
  if (!all.ok()) return ErrorReply(all.status());
  v1::ListBaselinesResponse response;
  if (absl::Status paged = PageByName(*std::move(all), *page_size,
                                      QueryString(request, "page_token"),
                                      response.mutable_baselines(),
                                      response.mutable_next_page_token());
      !paged.ok()) {
    return ErrorReply(paged);
  }
  return JsonReply(response);
}

RestReply GetBaseline(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  return Answer(context.workflows->GetBaseline(absl::StrCat("baselines/", request.id)));
}

RestReply DeleteBaseline(const RestContext& context, const RestRequest& request) {
  if (const RestReply* none = NoWorkflows(context)) return *none;
  absl::Status deleted = context.workflows->DeleteBaseline(absl::StrCat("baselines/", request.id));
  if (!deleted.ok()) return ErrorReply(deleted);
  return JsonReply(google::protobuf::Empty());
}

}  // namespace collbench::rest_handlers

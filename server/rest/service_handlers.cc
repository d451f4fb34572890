// SPDX-License-Identifier: Apache-2.0
// The /v1/workers routes and the service's own health, readiness and
// metrics.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collbench/v1/coordinator.pb.h"
#include "google/protobuf/empty.pb.h"
#include "server/core/listing.h"
#include "server/rest/handlers.h"
#include "server/rest/rest_json.h"

namespace collbench::rest_handlers {
namespace {

// The resource name of the worker in the path.
std::string WorkerName(const RestRequest& request) { return absl::StrCat("workers/", request.id); }

RestReply Text(std::string body, std::string content_type = "text/plain; charset=utf-8") {
  RestReply reply;
  reply.content_type = std::move(content_type);
  reply.body = std::move(body);
  return reply;
}

}  // namespace

RestReply ListWorkers(const RestContext& context, const RestRequest& request) {
  absl::StatusOr<int32_t> page_size = QueryInt(request, "page_size");
  if (!page_size.ok()) return ErrorReply(page_size.status());
  v1::ListWorkersRequest list;
  list.set_page_size(*page_size);
  list.set_page_token(QueryString(request, "page_token"));
  return Answer(ListWorkersPage(*context.manager, list));
}

RestReply GetWorker(const RestContext& context, const RestRequest& request) {
  return Answer(context.manager->GetWorker(WorkerName(request)));
}

RestReply DrainWorker(const RestContext& context, const RestRequest& request) {
  const std::string name = WorkerName(request);
  if (absl::Status body = CheckBodyName<v1::DrainWorkerRequest>(request, name, "worker");
      !body.ok()) {
    return ErrorReply(body);
  }
  return Answer(context.manager->DrainWorker(name));
}

RestReply UndrainWorker(const RestContext& context, const RestRequest& request) {
  const std::string name = WorkerName(request);
  if (absl::Status body = CheckBodyName<v1::UndrainWorkerRequest>(request, name, "worker");
      !body.ok()) {
    return ErrorReply(body);
  }
  return Answer(context.manager->UndrainWorker(name, absl::Now()));
}

RestReply ClearWorker(const RestContext& context, const RestRequest& request) {
  const std::string name = WorkerName(request);
  if (absl::Status body = CheckBodyName<v1::ClearWorkerRequest>(request, name, "worker");
      !body.ok()) {
    return ErrorReply(body);
  }
  return Answer(context.manager->ClearWorker(name, "by an operator", absl::Now()));
}

RestReply DeleteWorker(const RestContext& context, const RestRequest& request) {
  const std::string name = WorkerName(request);
  if (absl::Status body = CheckBodyName<v1::DeleteWorkerRequest>(request, name, "worker");
      !body.ok()) {
    return ErrorReply(body);
  }
  if (absl::Status deleted = context.manager->ForgetWorker(name); !deleted.ok()) {
    return ErrorReply(deleted);
  }
  return JsonReply(google::protobuf::Empty());
}

RestReply Healthz(const RestContext& context, const RestRequest& request) { return Text("ok\n"); }

RestReply Readyz(const RestContext& context, const RestRequest& request) {
  if (context.ready && !context.ready()) {
    return ErrorReply(absl::UnavailableError("not ready"));
  }
  return Text("ready\n");
}

RestReply Metrics(const RestContext& context, const RestRequest& request) {
  return Text(context.metrics_text ? context.metrics_text() : "",
              "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace collbench::rest_handlers

// The /v1/workers routes and the service's own health, readiness and
// metrics.
#include <string>

#include "absl/strings/str_cat.h"
#include "collbench/v1/coordinator.pb.h"
#include "server/core/listing.h"
#include "server/rest/handlers.h"
#include "server/rest/rest_json.h"

namespace collbench::rest_handlers {
namespace {

template <typename T>
RestReply Answer(const absl::StatusOr<T>& value) {
  return value.ok() ? JsonReply(*value) : ErrorReply(value.status());
}

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
  return Answer(context.manager->GetWorker(absl::StrCat("workers/", request.id)));
}

RestReply DrainWorker(const RestContext& context, const RestRequest& request) {
  // The body is optional: nothing, {}, or a DrainWorkerRequest naming this
  // worker.
  v1::DrainWorkerRequest drain;
  if (absl::Status parsed = ProtoFromJson(request.body, /*empty_ok=*/true, &drain); !parsed.ok()) {
    return ErrorReply(parsed);
  }
  const std::string name = absl::StrCat("workers/", request.id);
  if (!drain.name().empty() && drain.name() != name) {
    return ErrorReply(absl::InvalidArgumentError(
        absl::StrCat("name: \"", drain.name(), "\" is not the worker in the path (", name, ")")));
  }
  return Answer(context.manager->DrainWorker(name));
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

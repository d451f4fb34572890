// SPDX-License-Identifier: Apache-2.0
// The REST adapter of the method table (server/api/method_table.h): every
// HTTP binding of every method as a RestRoute, answered generically. A
// request is decoded into the method's own request message: the `{id}` of
// the path becomes `name` ("runs/{id}"); the body, as the method's
// RestBody says, is parsed in the proto3 JSON mapping (server/api/rest_json.h);
// a GET's query parameters fill the other fields. Then the handler is
// called and its answer encoded: the response message as JSON, an error
// as the JSON error body with its HTTP status (and Retry-After for a
// refusal that carries one), a watch as a server-sent-events response
// (server/api/sse_watch.h). The role was checked by the router before.
//
// Decoding errors are INVALID_ARGUMENT naming what is wrong: "request
// body: …", `name: "X" is not the run in the path (runs/Y)`,
// `page_size: "x" is not an integer`.
//
// Thread safety: the routes may be served from any thread at once.
#ifndef COLLBENCH_SERVER_API_REST_ADAPTER_H_
#define COLLBENCH_SERVER_API_REST_ADAPTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "server/api/call_context.h"
#include "server/api/handlers.h"
#include "server/api/method_table.h"
#include "server/api/rest_json.h"
#include "server/api/rest_route.h"
#include "server/api/sse_watch.h"

namespace collbench {

// Every HTTP binding of every method, served through `api` (not owned;
// outlives the routes).
std::vector<RestRoute> ApiRestRoutes(CoordinatorApi* api);

// The request fields a binding takes from the query string: a GET's
// fields other than the one its path names; none for other verbs.
std::vector<std::string> QueryFields(const ApiMethod& method, const HttpBinding& binding);

// Fills `message` (the method's request) from a routed request.
// `body` says what its body holds.
absl::Status DecodeRestRequest(RestBody body, const HttpBinding& binding,
                               const RestRequest& request, google::protobuf::Message* message);

// The generic bodies of the REST entry points the table makes.
template <typename Req, typename Resp>
HttpReply RestUnary(CoordinatorApi& api, RestBody body, const HttpBinding& binding,
                    const RestRequest& request,
                    absl::StatusOr<Resp> (CoordinatorApi::*handler)(const CallContext&,
                                                                    const Req&)) {
  Req decoded;
  if (absl::Status status = DecodeRestRequest(body, binding, request, &decoded); !status.ok()) {
    return ErrorReply(status);
  }
  return Answer((api.*handler)(CallContext{request.caller}, decoded));
}

template <typename Req, typename Event>
HttpReply RestStream(CoordinatorApi& api, const HttpBinding& binding, const RestRequest& request,
                     absl::StatusOr<std::shared_ptr<Watch<Event>>> (CoordinatorApi::*handler)(
                         const CallContext&, const Req&),
                     std::string (*format)(const Event&)) {
  Req decoded;
  if (absl::Status status = DecodeRestRequest(RestBody::kNone, binding, request, &decoded);
      !status.ok()) {
    return ErrorReply(status);
  }
  absl::StatusOr<std::shared_ptr<Watch<Event>>> watch =
      (api.*handler)(CallContext{request.caller}, decoded);
  if (!watch.ok()) return ErrorReply(watch.status());
  HttpReply reply;
  reply.content_type = "text/event-stream";
  reply.stream = std::make_shared<SseWatchSource<Event>>(*std::move(watch), format);
  return reply;
}

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_REST_ADAPTER_H_

// SPDX-License-Identifier: Apache-2.0
// The Coordinator API's method table (docs/design/run-lifecycle.md#api):
// every method declared once, with its gRPC name, its role, its HTTP verb
// and path template, and its handler (server/api/handlers.h). The gRPC
// adapter (server/api/grpc_adapter.h) and the REST adapter
// (server/api/rest_adapter.h) are generic: each decodes the same request
// message, makes the one authorization check with the method's role
// (server/api/authorize.h), calls the handler and encodes its answer
// (api/status_mapping.h maps an error to both protocols). A method is
// unary (request -> response message) or a watch (request -> a stream of
// events, server/api/watch.h).
//
// HTTP bindings follow Google's API design guide: a path template has at
// most one `{id}` variable, one path segment, which is the last segment of
// the request's `name` ("/v1/runs/{id}:cancel" -> name "runs/{id}"); a
// GET takes the request's other fields from the query; other verbs take
// the request, or nothing, as a JSON body (RestBody).
//
// Thread safety: the table is immutable; ApiMethods() may be called from
// any thread.
#ifndef COLLBENCH_SERVER_API_METHOD_TABLE_H_
#define COLLBENCH_SERVER_API_METHOD_TABLE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "server/auth/authorizer.h"
#include "server/http/http_handler.h"

namespace grpc::internal {
class MethodHandler;
}  // namespace grpc::internal

namespace collbench {

class CoordinatorApi;
struct RestRequest;

// What the body of a method's HTTP request holds.
enum class RestBody {
  kNone,      // no body is read (GET: the query holds the other fields)
  kRequest,   // the whole request message, required
  kOptional,  // nothing, {}, or the request naming the path's resource
};

// One HTTP verb and path of a method.
struct HttpBinding {
  std::string method;   // GET, POST, DELETE
  std::string path;     // template, e.g. /v1/runs/{id}:cancel
  std::string summary;  // one line, also in docs/openapi.yaml
  // A /ui/ page's binding (a browser's EventSource): a session cookie may
  // stand in for the bearer token, and a refusal is the login page.
  bool browser = false;
};

// What the gRPC adapter needs to serve a method.
struct GrpcEnv;

struct ApiMethod {
  std::string name;  // the gRPC method: /collbench.v1.Coordinator/{name}
  Role role = Role::kOperator;
  bool streaming = false;         // a watch: a server stream, server-sent events over HTTP
  std::vector<HttpBinding> http;  // the REST binding, then any browser ones
  RestBody body = RestBody::kNone;
  const google::protobuf::Descriptor* request = nullptr;
  // The adapters' entry points, made from the typed handler by the
  // table's Unary() and Stream(): a gRPC method handler (owned by the
  // caller), and the answer to one routed HTTP request.
  std::function<grpc::internal::MethodHandler*(const GrpcEnv& env)> grpc_handler;
  std::function<HttpReply(CoordinatorApi& api, const HttpBinding& binding,
                          const RestRequest& request)>
      rest_handler;
};

// Every method of the Coordinator service, in the proto's order.
const std::vector<ApiMethod>& ApiMethods();

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_METHOD_TABLE_H_

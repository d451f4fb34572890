// SPDX-License-Identifier: Apache-2.0
// One route of the coordinator's HTTP API and what its handler sees. The
// REST router (server/api/rest_router.h) serves a list of them: the method
// table's HTTP bindings (server/api/rest_adapter.h), the service's own
// routes (server/api/service_routes.h) and the /ui/ pages (server/ui/).
// docs/openapi.yaml describes exactly that list (a unit test compares the
// two both ways), and metrics label requests by Template().
//
// A path template has literal parts and at most one `{id}` variable, which
// matches one non-empty path segment up to the next '/' or ':' (so
// `/v1/runs/{id}:cancel` and `/v1/runs/{id}` are different routes).
#ifndef COLLBENCH_SERVER_API_REST_ROUTE_H_
#define COLLBENCH_SERVER_API_REST_ROUTE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "server/auth/authorizer.h"
#include "server/http/http_handler.h"

namespace collbench {

// One routed request. Query parameter names are in snake_case (the router
// turns pageSize into page_size), each is one the route takes, and each
// appears at most once.
struct RestRequest {
  std::string id;      // the {id} path segment, if any
  std::string caller;  // who asks, for per-caller limits (Authorizer::CallerOf)
  std::string cookie;  // the Cookie header (a /ui/ page's session), "" without one
  std::map<std::string, std::string> query;
  std::string body;
};

// Answers a routed request; called on a handler thread (or the event loop,
// for an on_loop route), from any thread at once.
using RestHandler = std::function<HttpReply(const RestRequest& request)>;

struct RestRoute {
  std::string method;  // GET, POST, DELETE
  std::string path;    // template, e.g. /v1/runs/{id}:cancel
  Role role = Role::kOperator;
  std::string summary;                    // one line, also in the OpenAPI file
  std::vector<std::string> query_params;  // the query parameters it takes
  RestHandler handler;
  // Never blocks (no store, no rendering): answered on the HTTP server's
  // event loop itself, so health and readiness answer however busy the
  // handler threads are. The others run on those threads.
  bool on_loop = false;
  // A /ui/ page: a browser's session cookie may stand in for the bearer
  // token, and a refusal is the login page (server/api/rest_router.h).
  bool browser = false;

  // "GET /v1/runs/{id}": the route's name in metrics and logs.
  std::string Template() const { return method + " " + path; }
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_REST_ROUTE_H_

// SPDX-License-Identifier: Apache-2.0
// The REST API's routes, declared once (routes.cc). The dispatcher serves
// exactly these, docs/openapi.yaml describes exactly these (a unit test
// compares the two both ways), and metrics label requests by Template().
//
// A path template has literal parts and at most one `{id}` variable, which
// matches one non-empty path segment up to the next '/' or ':' (so
// `/v1/runs/{id}:cancel` and `/v1/runs/{id}` are different routes).
//
// Thread safety: the table is immutable; every function may be called from
// any thread.
#ifndef COLLBENCH_SERVER_REST_ROUTES_H_
#define COLLBENCH_SERVER_REST_ROUTES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/rest/handler.h"

namespace collbench {

// Who may call a route: anyone (health, readiness, metrics), a holder of a
// read token, or a holder of an operator token (which may also read).
enum class Access { kPublic, kRead, kOperator };

// "public", "read", "operator" (the x-collbench-access of docs/openapi.yaml).
absl::string_view AccessName(Access access);

struct RestRoute {
  std::string method;  // GET, POST
  std::string path;    // template, e.g. /v1/runs/{id}:cancel
  Access access;
  std::string summary;                    // one line, also in the OpenAPI file
  std::vector<std::string> query_params;  // the query parameters it takes
  RestHandler handler;
  // Never blocks (no store, no rendering): answered on the HTTP server's
  // event loop itself, so health and readiness answer however busy the
  // handler threads are. The others run on those threads.
  bool quick = false;

  // "GET /v1/runs/{id}": the route's name in metrics and logs.
  std::string Template() const { return method + " " + path; }
};

// Every route the REST API serves.
const std::vector<RestRoute>& RestRoutes();

struct RouteMatch {
  const RestRoute* route = nullptr;  // null when nothing matched
  std::string id;                    // the {id} segment of the match
  // When `route` is null: true if the path matches a route of another
  // method (answered 405 rather than 404); `allow` lists those methods.
  bool path_known = false;
  std::string allow;
};

// The route for `method` (HEAD counts as GET) and a request path (already
// URL-decoded, without the query string).
RouteMatch MatchRoute(absl::string_view method, absl::string_view path);

// Whether `path` matches `path_template`; the {id} segment goes to `*id`.
bool MatchTemplate(absl::string_view path_template, absl::string_view path, std::string* id);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_ROUTES_H_

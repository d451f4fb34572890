// SPDX-License-Identifier: Apache-2.0
// The coordinator's HTTP API over the transport (server/http): an
// HttpHandler that serves a list of RestRoutes (server/api/rest_route.h).
// For each request, on the event loop: the route (404 for an unknown
// path, 405 with Allow for a known path and another method); the one
// authorization check with the route's role (server/api/authorize.h;
// missing or unknown token 401 with WWW-Authenticate, a role that is not
// enough 403); the query parameter names (snake_case, each one the route
// takes, at most once: 400 naming it). Then the route's handler answers,
// on the loop for on_loop routes, else on a handler thread.
//
// Browser routes (/ui/ pages): without a bearer token, and where the
// route's role is protected at all, a BrowserGate (server/ui) checks the
// session cookie instead, and a refusal is the gate's login page rather
// than JSON.
//
// Errors are the JSON error body (server/api/rest_json.h), also for the
// transport's own refusals (ErrorReply).
//
// Thread safety: immutable once made; Route() may run on the loop while
// handlers run on other threads.
#ifndef COLLBENCH_SERVER_API_REST_ROUTER_H_
#define COLLBENCH_SERVER_API_REST_ROUTER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/api/rest_route.h"
#include "server/auth/authorizer.h"
#include "server/http/http_handler.h"

namespace collbench {

// How a browser's request to a /ui/ page is let in without a bearer token.
// Thread safety: both methods may be called from any thread.
class BrowserGate {
 public:
  virtual ~BrowserGate() = default;
  // OK when the session of `cookie_header` may do what `needed` allows;
  // Unauthenticated (no live session) or PermissionDenied otherwise.
  virtual absl::Status Check(absl::string_view cookie_header, Role needed) const = 0;
  // The answer to a browser route refused with `why`; `target` is the
  // request's path and query (where to go after signing in).
  virtual HttpReply Refusal(const absl::Status& why, absl::string_view target) const = 0;
};

struct RouteMatch {
  const RestRoute* route = nullptr;  // null when nothing matched
  std::string id;                    // the {id} segment of the match
  // When `route` is null: true if the path matches a route of another
  // method (answered 405 rather than 404); `allow` lists those methods.
  bool path_known = false;
  std::string allow;
};

// The route of `routes` for `method` (HEAD counts as GET) and a request
// path (already URL-decoded, without the query string).
RouteMatch MatchRoute(const std::vector<RestRoute>& routes, absl::string_view method,
                      absl::string_view path);

// Whether `path` matches `path_template`; the {id} segment goes to `*id`.
bool MatchTemplate(absl::string_view path_template, absl::string_view path, std::string* id);

class RestRouter final : public HttpHandler {
 public:
  // `authorizer` may be null (no tokens: every route is open); `gate` may
  // be null (browser routes need a bearer token like the others). Neither
  // is owned; both outlive the router.
  RestRouter(std::vector<RestRoute> routes, const Authorizer* authorizer, const BrowserGate* gate);

  HttpDispatch Route(const HttpRequest& request) override;
  HttpReply ErrorReply(int http_status, const absl::Status& status) override;

  const std::vector<RestRoute>& routes() const { return routes_; }

 private:
  // The check of the route's role: the bearer token, or a browser's session.
  absl::Status Authorize(const HttpRequest& in, const RestRoute& route) const;
  // The answer to a request the route refused (401, 403).
  HttpReply Refusal(const HttpRequest& in, const RestRoute& route, const absl::Status& why) const;
  absl::Status ParseQuery(const HttpRequest& in, const RestRoute& route,
                          RestRequest* request) const;

  const std::vector<RestRoute> routes_;
  const Authorizer* const authorizer_;
  const BrowserGate* const gate_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_REST_ROUTER_H_

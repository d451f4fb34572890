// SPDX-License-Identifier: Apache-2.0
// The coordinator's HTTP side, wired: the HTTP transport (server/http)
// serving the REST router (server/api/rest_router.h) over the method
// table's routes, the service's own routes (/healthz, /readyz, /metrics)
// and the /ui/ pages (server/ui), whose sessions also let browsers in.
// The Coordinator starts one when it has an HTTP listener; tests start one
// over a coordinator without gRPC.
//
// Ownership: owns the UI, the router and the server; the parts are not
// owned and outlive the frontend. Thread safety: Start() and Shutdown()
// from one thread; the counters from any.
#ifndef COLLBENCH_SERVER_APP_HTTP_FRONTEND_H_
#define COLLBENCH_SERVER_APP_HTTP_FRONTEND_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "server/api/handlers.h"
#include "server/api/rest_route.h"
#include "server/api/rest_router.h"
#include "server/api/service_routes.h"
#include "server/auth/authorizer.h"
#include "server/http/http_server.h"
#include "server/ui/ui.h"

namespace collbench {

struct HttpFrontendOptions {
  HttpServerOptions http;
  // The /ui/ sessions' lifetime and cap, and the login throttle.
  UiSessionOptions ui_sessions;
};

struct HttpFrontendParts {
  CoordinatorApi* api = nullptr;
  const Authorizer* authorizer = nullptr;  // may be null: no tokens
  const Clock* clock = nullptr;
  ServiceRouteOptions service;  // /metrics and /readyz
  // Each finished request with its route's template ("GET /v1/runs/{id}",
  // or "unmatched"), status and latency; may be empty.
  HttpRequestObserver on_request;
};

// Every route the coordinator's HTTP listener serves, in the order it
// matches them: the method table's, the service's, `ui`'s.
std::vector<RestRoute> CoordinatorRestRoutes(CoordinatorApi* api, Ui* ui,
                                             ServiceRouteOptions service);

class HttpFrontend {
 public:
  // Listens and serves; HttpServer::Start's errors.
  static absl::StatusOr<std::unique_ptr<HttpFrontend>> Start(const HttpFrontendOptions& options,
                                                             HttpFrontendParts parts);
  ~HttpFrontend();  // Shutdown()

  int port() const { return server_->port(); }
  // HttpServer::Shutdown(). Idempotent.
  void Shutdown() { server_->Shutdown(); }
  // /ui/login attempts refused by the throttle (429), and the requests
  // and connections the transport refused, since Start().
  int64_t login_refusals() const { return ui_->login_refusals(); }
  HttpRefusalCounts refusals() const { return server_->refusals(); }
  int open_connections() const { return server_->open_connections(); }

 private:
  HttpFrontend() = default;
  std::unique_ptr<Ui> ui_;
  std::unique_ptr<RestRouter> router_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_APP_HTTP_FRONTEND_H_

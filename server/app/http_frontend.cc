// SPDX-License-Identifier: Apache-2.0
#include "server/app/http_frontend.h"

#include <utility>

#include "common/status_macros.h"
#include "server/api/rest_adapter.h"

namespace collbench {

std::vector<RestRoute> CoordinatorRestRoutes(CoordinatorApi* api, Ui* ui,
                                             ServiceRouteOptions service) {
  std::vector<RestRoute> routes = ApiRestRoutes(api);
  for (RestRoute& route : ServiceRoutes(std::move(service))) routes.push_back(std::move(route));
  for (RestRoute& route : ui->Routes()) routes.push_back(std::move(route));
  return routes;
}

absl::StatusOr<std::unique_ptr<HttpFrontend>> HttpFrontend::Start(
    const HttpFrontendOptions& options, HttpFrontendParts parts) {
  std::unique_ptr<HttpFrontend> frontend(new HttpFrontend);
  UiOptions ui;
  ui.sessions = options.ui_sessions;
  ui.tls = !options.http.tls_cert.empty();
  frontend->ui_ = std::make_unique<Ui>(parts.api, parts.authorizer, parts.clock, ui);
  frontend->router_ = std::make_unique<RestRouter>(
      CoordinatorRestRoutes(parts.api, frontend->ui_.get(), std::move(parts.service)),
      parts.authorizer, frontend->ui_.get());
  HttpServerOptions http = options.http;
  http.form_path_prefix = "/ui/";  // the login and logout forms
  HttpServerDependencies deps;
  deps.handler = frontend->router_.get();
  deps.clock = parts.clock;
  deps.on_request = std::move(parts.on_request);
  ASSIGN_OR_RETURN(frontend->server_, HttpServer::Start(http, std::move(deps)));
  return frontend;
}

HttpFrontend::~HttpFrontend() {
  if (server_ != nullptr) server_->Shutdown();
}

}  // namespace collbench

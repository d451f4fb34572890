// SPDX-License-Identifier: Apache-2.0
#include "server/api/service_routes.h"

#include <utility>

#include "server/api/rest_json.h"

namespace collbench {
namespace {

HttpReply Text(std::string body, std::string content_type = "text/plain; charset=utf-8") {
  HttpReply reply;
  reply.content_type = std::move(content_type);
  reply.body = std::move(body);
  return reply;
}

}  // namespace

std::vector<RestRoute> ServiceRoutes(ServiceRouteOptions options) {
  RestRoute healthz{"GET",      "/healthz", Role::kPublic,
                    "Liveness", {},         [](const RestRequest&) { return Text("ok\n"); }};
  healthz.on_loop = true;
  RestRoute readyz{"GET",
                   "/readyz",
                   Role::kPublic,
                   "Readiness",
                   {},
                   [ready = options.ready](const RestRequest&) {
                     if (ready && !ready()) return ErrorReply(absl::UnavailableError("not ready"));
                     return Text("ready\n");
                   }};
  readyz.on_loop = true;
  RestRoute metrics{"GET",
                    "/metrics",
                    Role::kPublic,
                    "Prometheus metrics",
                    {},
                    [text = options.metrics_text](const RestRequest&) {
                      return Text(text ? text() : "", "text/plain; version=0.0.4; charset=utf-8");
                    }};
  return {std::move(healthz), std::move(readyz), std::move(metrics)};
}

}  // namespace collbench

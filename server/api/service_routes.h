// SPDX-License-Identifier: Apache-2.0
// The coordinator's own HTTP routes beside the API methods
// (docs/design/observability.md#health-and-readiness): GET /healthz and
// GET /readyz, answered on the event loop however busy the handler
// threads are, and GET /metrics (Prometheus text format). All public.
#ifndef COLLBENCH_SERVER_API_SERVICE_ROUTES_H_
#define COLLBENCH_SERVER_API_SERVICE_ROUTES_H_

#include <functional>
#include <string>
#include <vector>

#include "server/api/rest_route.h"

namespace collbench {

struct ServiceRouteOptions {
  // The body of GET /metrics; may be empty (an empty body).
  std::function<std::string()> metrics_text;
  // GET /readyz answers 200 while this returns true, 503 otherwise; may be
  // empty: always ready. Must not block (called on the event loop).
  std::function<bool()> ready;
};

std::vector<RestRoute> ServiceRoutes(ServiceRouteOptions options);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_SERVICE_ROUTES_H_

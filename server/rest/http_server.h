// The coordinator's HTTP listener (DESIGN §4, §5): the REST/JSON API under
// /v1 (the same operations and validation as the gRPC Coordinator service),
// /metrics, /healthz and /readyz. cpp-httplib stays private to this module.
//
// Thread safety: Start() and Shutdown() from one thread; requests are served
// on the server's own threads.
#ifndef COLLBENCH_SERVER_REST_HTTP_SERVER_H_
#define COLLBENCH_SERVER_REST_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/auth/authorizer.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"

namespace collbench {

struct HttpServerOptions {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT; port 0 picks one
  std::string tls_cert;                   // PEM files; both or neither
  std::string tls_key;
  size_t max_body_bytes = 1 << 20;        // larger request bodies get 413
};

struct HttpServerDependencies {
  // Not owned; all outlive the server.
  RunManager* manager = nullptr;
  WatchHub* hub = nullptr;
  const Authorizer* authorizer = nullptr;
  // The body of GET /metrics (Prometheus text format). Needs no token.
  std::function<std::string()> metrics_text;
  // GET /readyz answers 200 while this returns true, 503 otherwise.
  std::function<bool()> ready;
  // Called once per finished request with the route's template (e.g.
  // "GET /v1/runs/{id}"), the HTTP status and the time it took.
  std::function<void(absl::string_view route, int http_status, absl::Duration latency)> on_request;
};

class HttpServer {
 public:
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           HttpServerDependencies deps);
  virtual ~HttpServer() = default;
  // The port it listens on (useful with port 0).
  virtual int port() const = 0;
  // Ends open event streams, stops listening and joins the server's threads.
  virtual void Shutdown() = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_HTTP_SERVER_H_

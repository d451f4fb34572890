// The coordinator's HTTP listener (DESIGN §4, §5): the REST/JSON API under
// /v1 (the same operations and validation as the gRPC Coordinator service),
// /metrics, /healthz and /readyz. cpp-httplib stays private to this module.
//
// Errors: every failed request gets a JSON body {code, status, message,
// details} (server/rest/rest_json.h) with the HTTP status HttpStatusFor()
// gives its code; 405 for a known path with another method, 413 for a body
// over max_body_bytes. Before routing, the request guard
// (server/rest/request_guard.h) refuses bodies not sent as JSON (415), a
// state-changing request from a foreign Origin (403) and, on a loopback
// listener, a Host that is not loopback (421). Tokens: routes other than /healthz, /readyz and
// /metrics need a bearer token of the route's role (server/rest/routes.h);
// missing or unknown gets 401, a read token on an operator route 403.
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
#include "server/core/watcher_limits.h"
#include "server/rest/ui_sessions.h"

namespace collbench {

struct HttpServerOptions {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT; port 0 picks one
  std::string tls_cert;                   // PEM files; both or neither
  std::string tls_key;
  // PEM CA certificate(s), only with tls_cert: a client must present a
  // certificate that chains to it or the TLS handshake fails (mutual TLS);
  // bearer tokens still apply.
  std::string tls_client_ca;
  size_t max_body_bytes = 1 << 20;  // larger request bodies get 413
  // Requests are served by this many threads. An open event stream
  // (GET /v1/runs/{id}:watch) holds none: once answered, its socket goes
  // to the event stream writer (server/rest/sse_writer.h). Only with TLS
  // does a stream hold a thread while it lasts.
  int threads = 64;
  // An event stream sends a comment after this long without an event.
  absl::Duration event_keepalive = absl::Seconds(15);
  // The /ui/ sessions' lifetime and cap, and the login throttle.
  UiSessionOptions ui_sessions;
};

struct HttpServerDependencies {
  // Not owned; all outlive the server.
  RunManager* manager = nullptr;
  WatchHub* hub = nullptr;
  const Authorizer* authorizer = nullptr;
  // Bounds event streams, with gRPC's WatchRun; may be null: no limits.
  WatcherLimits* watchers = nullptr;
  // The body of GET /metrics (Prometheus text format). Needs no token.
  std::function<std::string()> metrics_text;
  // GET /readyz answers 200 while this returns true, 503 otherwise.
  std::function<bool()> ready;
  // Called once per finished request with the route's template (e.g.
  // "GET /v1/runs/{id}", or "unmatched" for a request no route serves),
  // the HTTP status and the time it took (for an event stream: until it
  // was handed to the writer; with TLS, until it ended). Called on the
  // server's threads; may be empty.
  std::function<void(absl::string_view route, int http_status, absl::Duration latency)> on_request;
};

class HttpServer {
 public:
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           HttpServerDependencies deps);
  virtual ~HttpServer() = default;
  // The port it listens on (useful with port 0).
  virtual int port() const = 0;
  // Stops listening, ends open event streams (each with a clean end of
  // its response) and joins the server's threads. Idle keep-alive
  // connections are closed within about a second. Idempotent; the
  // destructor calls it.
  virtual void Shutdown() = 0;
  // /ui/login attempts refused by the throttle (429), and requests the
  // request guard refused (403, 415, 421), since Start().
  virtual int64_t login_refusals() const = 0;
  virtual int64_t guard_refusals() const = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_HTTP_SERVER_H_

// SPDX-License-Identifier: Apache-2.0
// The coordinator's HTTP listener (docs/design/observability.md,
// docs/design/security.md): the REST/JSON API under /v1 (the same operations
// and validation as the gRPC Coordinator service), /metrics, /healthz and
// /readyz, and the /ui/ pages. libevent (evhttp) stays private to this module.
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
// Logs: every request is logged when answered (server/rest/request_log.h:
// refusals at warn with the caller, never a token; state-changing requests
// at info, reads at debug) and answered with its X-Request-Id.
//
// Threads: one event loop owns every connection (plain or TLS) and writes
// every answer and event stream; handlers that may block (the store,
// report rendering, CreateRun) run on `threads` handler threads and post
// their reply back to the loop. No connection, event streams included,
// holds a thread.
//
// Limits: request line and headers 64 KiB; a connection idle for 5 s
// while a request or an answer is due is closed; an event stream whose
// client takes nothing for 60 s is closed; beyond `threads` x 64 requests
// waiting for a handler thread, 429 with Retry-After.
//
// Thread safety: Start() and Shutdown() from one thread.
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
  // Handlers that may block run on this many threads. Health, readiness
  // and open event streams (GET /v1/runs/{id}:watch) need none: the event
  // loop serves them (server/rest/sse_writer.h), with or without TLS.
  int threads = 16;
  // An event stream sends a comment after this long without an event.
  absl::Duration event_keepalive = absl::Seconds(15);
  // The /ui/ sessions' lifetime and cap, and the login throttle.
  UiSessionOptions ui_sessions;
};

class WorkflowManager;
class ScheduleManager;

struct HttpServerDependencies {
  // Not owned; all outlive the server.
  RunManager* manager = nullptr;
  WatchHub* hub = nullptr;
  WorkflowManager* workflows = nullptr;  // may be null: /v1/workflows answers 503
  ScheduleManager* schedules = nullptr;  // may be null: /v1/schedules answers 503
  const Authorizer* authorizer = nullptr;
  // Bounds event streams, with gRPC's WatchRun; may be null: no limits.
  WatcherLimits* watchers = nullptr;
  // The body of GET /metrics (Prometheus text format). Needs no token.
  std::function<std::string()> metrics_text;
  // GET /readyz answers 200 while this returns true, 503 otherwise.
  std::function<bool()> ready;
  // Called once per finished request with the route's template (e.g.
  // "GET /v1/runs/{id}", or "unmatched" for a request no route serves),
  // the HTTP status and the time it took (for an event stream: until its
  // response started). Called on the server's event loop; must not block;
  // may be empty.
  std::function<void(absl::string_view route, int http_status, absl::Duration latency)> on_request;
};

class HttpServer {
 public:
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           HttpServerDependencies deps);
  virtual ~HttpServer() = default;
  // The port it listens on (useful with port 0).
  virtual int port() const = 0;
  // Stops listening, answers requests already read (new ones on open
  // connections get 503), ends open event streams (each with a clean end
  // of its response, given up to 2 s to go out), closes every connection
  // and joins the server's threads. Idempotent; the destructor calls it.
  virtual void Shutdown() = 0;
  // /ui/login attempts refused by the throttle (429), and requests the
  // request guard refused (403, 415, 421), since Start().
  virtual int64_t login_refusals() const = 0;
  virtual int64_t guard_refusals() const = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_REST_HTTP_SERVER_H_

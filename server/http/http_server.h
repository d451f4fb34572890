// SPDX-License-Identifier: Apache-2.0
// The coordinator's HTTP transport (docs/design/observability.md,
// docs/design/security.md): a listener, plain or TLS, that reads requests
// and writes answers and event streams for an HttpHandler
// (server/http/http_handler.h), which decides what each request gets. It
// knows nothing of routes, tokens or the API; libevent (evhttp) stays
// private to this module.
//
// Before the handler's answer is used, the transport's own checks run, in
// this order: while shutting down, 503; the request guard
// (server/http/request_guard.h) refuses bodies not sent as JSON (415), a
// state-changing request from a foreign Origin (403) and, on a loopback
// listener, a Host that is not loopback (421). Their bodies come from
// HttpHandler::ErrorReply().
//
// Logs: every request is logged when answered (server/http/request_log.h:
// refusals at warn with the caller, never a token; state-changing requests
// at info, reads at debug) and answered with its X-Request-Id.
//
// Threads: one event loop owns every connection (plain or TLS) and writes
// every answer and event stream; answers that may block (the store,
// report rendering, CreateRun) run on `threads` handler threads and post
// their reply back to the loop. No connection, event streams included,
// holds a thread.
//
// Limits (docs/operations/limits.md#http): request line and headers
// 64 KiB and a body of max_body_bytes, both refused (413) by evhttp from
// what the headers announce, before a body is buffered; at most
// max_connections open connections, and max_unauthenticated_connections
// that have not made an authenticated request yet (a new one beyond is
// refused); a whole request must arrive within request_deadline
// (unauthenticated_request_deadline before the connection authenticated);
// a connection idle for 5 s while a request or an answer is due is
// closed; an event stream whose client takes nothing for 60 s is closed;
// beyond `threads` x 64 requests waiting for a handler thread, 429 with
// Retry-After (server/http/connection_guard.h).
//
// Time: request latencies and event-stream keep-alives read the injected
// Clock; nothing here sleeps.
//
// Thread safety: Start() and Shutdown() from one thread.
#ifndef COLLBENCH_SERVER_HTTP_HTTP_SERVER_H_
#define COLLBENCH_SERVER_HTTP_HTTP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/http/http_handler.h"

namespace collbench {

// What one client may make the transport hold (docs/operations/limits.md#http).
struct HttpLimits {
  size_t max_body_bytes = 1 << 20;  // larger request bodies get 413
  // Connections open at once, and of them not yet authenticated; beyond
  // either a new connection is refused (0: no limit).
  int max_connections = 1024;
  int max_unauthenticated_connections = 512;
  // What unauthenticated connections together may have sent toward
  // requests not yet read whole (0: no limit).
  size_t max_unauthenticated_bytes = 64 << 20;
  // How long a connection may take to send one whole request, from its
  // accept or the end of the previous answer, once it has made an
  // authenticated request and before; zero: no deadline.
  absl::Duration request_deadline = absl::Seconds(60);
  absl::Duration unauthenticated_request_deadline = absl::Seconds(10);
};

struct HttpServerOptions {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT; port 0 picks one
  std::string tls_cert;                   // PEM files; both or neither
  std::string tls_key;
  // PEM CA certificate(s), only with tls_cert: a client must present a
  // certificate that chains to it or the TLS handshake fails (mutual TLS);
  // bearer tokens still apply.
  std::string tls_client_ca;
  HttpLimits limits;
  // Paths under which the server's own HTML forms post
  // (application/x-www-form-urlencoded, server/http/request_guard.h);
  // empty: JSON bodies only.
  std::string form_path_prefix;
  // Answers that may block run on this many threads. Quick answers and
  // open event streams need none: the event loop serves them
  // (server/http/sse_writer.h), with or without TLS.
  int threads = 16;
  // An event stream sends a comment after this long without an event.
  absl::Duration event_keepalive = absl::Seconds(15);
};

// Called once per finished request with its dispatch's label, the HTTP
// status and the time it took (for an event stream: until its response
// started). Called on the server's event loop; must not block.
using HttpRequestObserver =
    std::function<void(absl::string_view label, int http_status, absl::Duration latency)>;

// Requests and connections the transport refused on its own, since Start().
struct HttpRefusalCounts {
  int64_t request_guard = 0;                // 403, 415, 421 (server/http/request_guard.h)
  int64_t too_large = 0;                    // 413: body, or request line and headers
  int64_t connections = 0;                  // over max_connections
  int64_t unauthenticated_connections = 0;  // over max_unauthenticated_connections
  int64_t request_deadline = 0;             // closed for missing the deadline
};

struct HttpServerDependencies {
  HttpHandler* handler = nullptr;  // not owned; outlives the server
  const Clock* clock = nullptr;    // not owned; outlives the server
  HttpRequestObserver on_request;  // may be empty
};

class HttpServer {
 public:
  // Listens and serves. InvalidArgument for a bad address or TLS options
  // (naming the flag), Unavailable when the address cannot be bound.
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
  virtual HttpRefusalCounts refusals() const = 0;
  // Connections open now, event streams included; any thread, until
  // Shutdown() returns.
  virtual int open_connections() const = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_HTTP_SERVER_H_

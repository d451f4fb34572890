// SPDX-License-Identifier: Apache-2.0
// What the HTTP transport (server/http) hands to the application above it
// and takes back, independent of the HTTP library: one request as read,
// one answer (a body, or an event stream), and the HttpHandler that
// decides how each request is answered. The transport knows no route,
// token or JSON schema; the handler (server/api's RestRouter in the
// coordinator) knows no socket.
//
// Thread safety: HttpHandler::Route() and ErrorReply() are called on the
// server's event loop and must not block; an HttpDispatch's `answer` runs
// on the loop or on a handler thread as the dispatch says.
#ifndef COLLBENCH_SERVER_HTTP_HTTP_HANDLER_H_
#define COLLBENCH_SERVER_HTTP_HTTP_HANDLER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace collbench {

class SseSource;

// One request as the transport read it. A header that is absent is
// std::nullopt (or "" for the ones every handler reads).
struct HttpRequest {
  std::string method;  // GET, POST, ... (HEAD as sent)
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded, without the query
  std::string peer;    // the client's address
  std::optional<std::string> host, origin, content_type, request_id;
  std::string authorization;  // the Authorization header, "" without one
  std::string cookie;         // the Cookie header, "" without one
  std::string body;
};

// One answer: a body with a content type, or an event stream.
struct HttpReply {
  int http_status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra response headers (e.g. Retry-After on a 429).
  std::map<std::string, std::string> headers;
  // When set, the answer is `text/event-stream` fed from this source and
  // `body` is unused (server/http/sse_writer.h).
  std::shared_ptr<SseSource> stream;
};

// How one request is answered, decided on the event loop.
struct HttpDispatch {
  // What metrics and logs call the request: a route's template
  // ("GET /v1/runs/{id}"), or "unmatched".
  std::string label;
  // Who asks, for the request log ("token N", "peer HOST"; never a token).
  std::string caller;
  // The request carried a credential that was checked and admitted (or
  // the server requires none): its connection gets the authenticated
  // budgets (server/http/connection_guard.h).
  bool authenticated = false;
  // Never blocks: run on the event loop (health, readiness, refusals).
  // Otherwise `answer` runs on a handler thread.
  bool on_loop = false;
  // The answer. Called once, and only when the transport's own checks
  // (shutdown, the request guard) let the request through.
  std::function<HttpReply()> answer;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // How `request` is answered. Called on the event loop for every request,
  // before the transport's own checks (so refusals carry the route's label).
  virtual HttpDispatch Route(const HttpRequest& request) = 0;
  // The answer the transport gives with its own refusals: 403, 415 or 421
  // from the request guard, 429 for too many connections or when the handler
  // threads are busy, 503 while shutting down. `status` says why.
  virtual HttpReply ErrorReply(int http_status, const absl::Status& status) = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_HTTP_HANDLER_H_

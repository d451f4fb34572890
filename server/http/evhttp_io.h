// SPDX-License-Identifier: Apache-2.0
// The few places where server/http meets evhttp's request and socket
// types: reading a request into an HttpRequest, writing an HttpReply, and
// binding the listening socket. Internal to server/http (it includes no
// libevent header itself; the .cc does).
//
// Thread safety: call on the event loop (Bind before it runs).
#ifndef COLLBENCH_SERVER_HTTP_EVHTTP_IO_H_
#define COLLBENCH_SERVER_HTTP_EVHTTP_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/http/http_handler.h"

struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;

namespace collbench {

// A request as read, and what the request guard needs besides.
struct IncomingRequest {
  HttpRequest request;
  // A state-changing request with a Content-Length over 0 or a
  // Transfer-Encoding.
  bool has_body = false;
};

IncomingRequest ReadRequest(evhttp_request* req);

// Writes `reply` (not a stream) as the whole answer to `req`.
void SendReply(evhttp_request* req, const HttpReply& reply);

// Binds HOST:PORT (port 0: any) for `http` with the longest backlog there
// is and SO_REUSEADDR; the bound port. Unavailable naming `listen` (the
// address as configured) when it cannot.
absl::StatusOr<int> BindListener(evhttp* http, const std::string& listen, const std::string& host,
                                 int port, evhttp_bound_socket** bound);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_EVHTTP_IO_H_

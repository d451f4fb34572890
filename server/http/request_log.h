// SPDX-License-Identifier: Apache-2.0
// The HTTP listener's request log (docs/design/observability.md#logs): one line per finished
// request, through common/log.h.
//
//   - refused (4xx): warn, event "http.refused", with the error message
//     and the caller (as the HttpHandler names it: "token N" or "peer
//     HOST", never the token itself);
//   - failed (5xx): error, event "http.failed";
//   - served: info for state-changing methods (POST, PUT, PATCH, DELETE),
//     debug for reads, event "http.request".
//
// Every line carries the request id (common/log.h's RequestIdFor, from the
// client's X-Request-Id); the listener sends it back as X-Request-Id and sets it on the lines the
// request's handler writes (common/log.h's ScopedLogField).
//
// Pure functions but for the log; safe from any thread.
#ifndef COLLBENCH_SERVER_HTTP_REQUEST_LOG_H_
#define COLLBENCH_SERVER_HTTP_REQUEST_LOG_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace collbench {

// What the log needs of one request, kept from its arrival to its answer.
struct RequestRecord {
  std::string route;  // the route's template ("GET /v1/runs/{id}"), or "unmatched"
  std::string method;
  std::string target;  // path and query as sent
  std::string peer;    // the client's address
  std::string caller;  // HttpDispatch::caller
  std::string request_id;
  absl::Time start;
};

// The "message" of a JSON error body ({"message": "...", ...}), or "".
std::string ErrorMessageOf(absl::string_view body);

// Writes the request's line; `body` is the answer's (for the error), `now`
// the time it was answered (for its latency).
void LogHttpRequest(const RequestRecord& record, int http_status, absl::string_view body,
                    absl::Time now);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_REQUEST_LOG_H_

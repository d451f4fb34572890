// SPDX-License-Identifier: Apache-2.0
// The checks every HTTP request passes before it is routed
// (docs/design/security.md#fail-closed), kept apart from the HTTP library so
// they outlive it:
//
// - Bodies only as application/json; the pages under the listener's
//   form path (the coordinator's /ui/) also take their own HTML forms
//   (application/x-www-form-urlencoded). Any other type, or a
//   body without a type, gets 415 naming the type. A browser page of any
//   site may send a "simple" cross-origin POST (text/plain, form types)
//   without asking first; JSON needs a CORS preflight this server never
//   grants.
// - A state-changing request (POST, PUT, PATCH, DELETE) whose Origin is not
//   this server's own (the scheme of the listener, the request's Host) gets
//   403. Without an Origin header (curl, the CLI, scripts: not a browser's
//   cross-site request) it may go on; `Origin: null` (sandboxed frames,
//   file: pages) is refused.
// - On a loopback listener only loopback Host names (localhost, 127.x.y.z,
//   [::1], any port) are served: a page of another site whose name a DNS
//   rebinding pointed at 127.0.0.1 carries its own name and gets 421.
//
// Pure functions; safe from any thread.
#ifndef COLLBENCH_SERVER_HTTP_REQUEST_GUARD_H_
#define COLLBENCH_SERVER_HTTP_REQUEST_GUARD_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace collbench {

// What the guard needs of one request. A header that is absent is
// std::nullopt; one that is present but empty is "".
struct GuardedRequest {
  absl::string_view method;                       // "GET", "POST", ...
  absl::string_view path;                         // without the query
  std::optional<absl::string_view> host;          // the Host header
  std::optional<absl::string_view> origin;        // the Origin header
  std::optional<absl::string_view> content_type;  // the Content-Type header
  bool has_body = false;                          // a Content-Length over 0, or a Transfer-Encoding
};

// What the guard needs of the listener that took the request.
struct GuardedListener {
  bool loopback = false;  // bound to 127.0.0.0/8, ::1 or localhost only
  bool tls = false;       // https (the scheme of its own Origin)
  // Paths starting with this take form bodies too; empty: none do.
  std::string form_path_prefix;
};

// Why a request is refused: 403, 415 or 421, and a message naming the
// header and its value.
struct GuardRefusal {
  int http_status = 0;
  std::string message;
};

// std::nullopt when the request may be routed.
std::optional<GuardRefusal> CheckRequest(const GuardedRequest& request,
                                         const GuardedListener& listener);

// Whether a method changes state (POST, PUT, PATCH, DELETE).
bool IsStateChanging(absl::string_view method);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_REQUEST_GUARD_H_

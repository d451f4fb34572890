// SPDX-License-Identifier: Apache-2.0
// How a browser holds a session for the /ui/ pages
// (docs/design/security.md#credentials, docs/design/workflows.md#reports). A
// browser cannot add an Authorization header to a page load or an EventSource,
// so /ui/login (public) takes a token in a form and, when it has read access,
// starts a server-side session (server/ui/ui_sessions.h) whose random id,
// never the token, goes into a cookie: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Path=/, Max-Age of the
// session's lifetime, and Secure when the coordinator serves TLS. POST
// /ui/logout ends the session and clears the cookie. The router accepts the
// cookie only on /ui/ routes, which only read; the API keeps its bearer header.
//
// Also the headers every /ui/ answer carries: a Content-Security-Policy
// that allows nothing from elsewhere and only the page's own nonce-bearing
// script, nosniff and no referrer.
//
// Pure functions; safe from any thread.
#ifndef COLLBENCH_SERVER_UI_UI_SESSION_H_
#define COLLBENCH_SERVER_UI_UI_SESSION_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace collbench {

inline constexpr char kUiCookieName[] = "collbench_session";

// Whether `path` (a route template or a request path) is a /ui/ page.
bool IsUiPath(absl::string_view path);

// The session id in a request's Cookie header ("a=1; collbench_session=…"),
// or "" when it carries none.
std::string UiSessionFromCookies(absl::string_view cookie_header);

// The Set-Cookie value that stores the session `id` for `max_age_s`.
std::string UiSessionCookie(absl::string_view id, bool secure, int64_t max_age_s);

// The Set-Cookie value that makes the browser drop the session cookie.
std::string UiClearedCookie(bool secure);

// `next` when it names a /ui/ page of this server, else "/ui/": a login
// never redirects elsewhere.
std::string SafeUiTarget(absl::string_view next);

// A fresh random nonce for one response's script (base64, 128 bits).
std::string NewScriptNonce();

// The security headers of a /ui/ answer; `nonce` allows its one script
// (empty: no script may run).
std::map<std::string, std::string> UiSecurityHeaders(const std::string& nonce);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_UI_UI_SESSION_H_

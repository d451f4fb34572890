// SPDX-License-Identifier: Apache-2.0
// Replies of the /ui/ pages: an HTML page with the /ui/ security headers
// (server/ui/ui_session.h), an error as a page rather than JSON, and the
// login form (also what a /ui/ page without a valid token answers, 401).
#ifndef COLLBENCH_SERVER_UI_UI_PAGES_H_
#define COLLBENCH_SERVER_UI_UI_PAGES_H_

#include <string>

#include "absl/status/status.h"
#include "analysis/html.h"
#include "google/protobuf/timestamp.pb.h"
#include "server/http/http_handler.h"

namespace collbench {

// The links above every /ui/ page's title, and the sign-out form.
inline constexpr char kUiNav[] =
    "<a href=\"/ui/\">runs</a><a href=\"/ui/workflows\">workflows</a>"
    "<a href=\"/ui/schedules\">schedules</a>"
    "<a href=\"/ui/login\">token</a>"
    "<form class=\"logout\" method=\"post\" action=\"/ui/logout\">"
    "<button type=\"submit\">sign out</button></form>";

// <a href="HREF">TEXT</a>, both escaped.
std::string UiLink(const std::string& href, const std::string& text);

// <span class="badge WORD">WORD</span>: a state or outcome in lower case,
// coloured by the page's style sheet (analysis/html.cc) where it has a
// colour (succeeded green; regression, failed, cancelled red; skipped
// amber) and neutral otherwise.
std::string UiBadge(const std::string& word);

// "YYYY-MM-DD HH:MM:SS" in UTC; "" for an unset timestamp.
std::string UiTime(const google::protobuf::Timestamp& time);

// A link to the workflow's page ("workflows/{id}" or "{id}"); "" for "".
std::string UiWorkflowLink(const std::string& workflow);

// `page` as text/html with the security headers; a page with a script
// gets a CSP that allows that script's nonce only.
HttpReply UiPageReply(const HtmlPage& page, int http_status = 200);

// `status` as a page (REQUIRES: !status.ok()), with HttpStatusFor's code.
HttpReply UiErrorReply(const absl::Status& status);

// The login form; after signing in the browser goes to `next` (a /ui/
// page). `message` (text) says why the form is shown again; may be empty.
HttpReply UiLoginReply(int http_status, const std::string& next, const std::string& message);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_UI_UI_PAGES_H_

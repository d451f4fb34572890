// SPDX-License-Identifier: Apache-2.0
#include "server/ui/ui_pages.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "api/convert.h"
#include "api/status_mapping.h"
#include "server/ui/ui_session.h"

namespace collbench {

std::string UiLink(const std::string& href, const std::string& text) {
  return absl::StrCat("<a href=\"", HtmlEscape(href), "\">", HtmlEscape(text), "</a>");
}

std::string UiBadge(const std::string& word) {
  return absl::StrCat("<span class=\"badge ", HtmlEscape(word), "\">", HtmlEscape(word), "</span>");
}

std::string UiTime(const google::protobuf::Timestamp& time) {
  if (time.seconds() == 0 && time.nanos() == 0) return "";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", TimeFromTimestamp(time), absl::UTCTimeZone());
}

std::string UiWorkflowLink(const std::string& workflow) {
  absl::string_view id = workflow;
  absl::ConsumePrefix(&id, "workflows/");
  if (id.empty()) return "";
  return UiLink(absl::StrCat("/ui/workflows/", id), std::string(id));
}

HttpReply UiPageReply(const HtmlPage& page, int http_status) {
  HttpReply reply;
  reply.http_status = http_status;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = RenderHtmlPage(page);
  reply.headers = UiSecurityHeaders(page.script_nonce);
  return reply;
}

HttpReply UiErrorReply(const absl::Status& status) {
  return UiPageReply({absl::StrCat("collbench: ", absl::StatusCodeToString(status.code())),
                      "<a href=\"/ui/\">runs</a>",
                      absl::StrCat("<p class=\"note\">", HtmlEscape(status.message()), "</p>\n"),
                      "", ""},
                     HttpStatusFor(status.code()));
}

HttpReply UiLoginReply(int http_status, const std::string& next, const std::string& message) {
  std::string body;
  if (!message.empty()) absl::StrAppend(&body, "<p class=\"note\">", HtmlEscape(message), "</p>\n");
  absl::StrAppend(
      &body,
      "<p class=\"meta\">The pages under /ui/ need a token with read access, as the API does. "
      "Signing in starts a session of at most 12 hours; its cookie (HttpOnly, SameSite=Strict, "
      "for these pages only) holds a random session id, never the token.</p>\n"
      "<form class=\"login\" method=\"post\" action=\"/ui/login\">"
      "<input type=\"hidden\" name=\"next\" value=\"",
      HtmlEscape(next),
      "\"><label>Token <input type=\"password\" name=\"token\" autocomplete=\"off\" "
      "autofocus></label> <button type=\"submit\">Sign in</button></form>\n");
  return UiPageReply({"collbench: sign in", "<a href=\"/ui/\">runs</a>", body, "", ""},
                     http_status);
}

}  // namespace collbench

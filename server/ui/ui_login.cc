// SPDX-License-Identifier: Apache-2.0
// Signing in and out of the /ui/ pages (server/ui/ui_session.h): the token
// form, a login that turns a token with read access into a session cookie
// (throttled per client), and a logout that ends the session.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/api/rest_json.h"
#include "server/ui/ui_handlers.h"
#include "server/ui/ui_pages.h"
#include "server/ui/ui_session.h"
#include "server/ui/ui_sessions.h"

namespace collbench::ui_handlers {

HttpReply LoginForm(const UiContext& context, const RestRequest& request) {
  const auto next = request.query.find("next");
  return UiLoginReply(200, SafeUiTarget(next == request.query.end() ? "" : next->second), "");
}

HttpReply Login(const UiContext& context, const RestRequest& request) {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> form =
      ParseQueryString(request.body);
  if (!form.ok()) return UiLoginReply(400, "/ui/", "the form could not be read");
  std::string token, next = "/ui/";
  for (const auto& [name, value] : *form) {
    if (name == "token") token = value;
    if (name == "next") next = SafeUiTarget(value);
  }
  HttpReply reply;
  reply.http_status = 303;
  reply.content_type = "text/plain; charset=utf-8";
  reply.headers = UiSecurityHeaders("");
  reply.headers["Location"] = next;
  if (context.authorizer == nullptr || !context.authorizer->Protects(Role::kRead)) {
    reply.body = "this coordinator needs no token\n";
    return reply;
  }
  if (context.sessions == nullptr) {
    return UiLoginReply(503, next, "signing in is not available on this server");
  }
  const absl::Time now = context.clock->Now();
  if (const absl::Duration wait = context.sessions->AdmitLogin(request.caller, now);
      wait > absl::ZeroDuration()) {
    const int64_t retry_s =
        std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(wait, absl::Seconds(1))));
    HttpReply refused = UiLoginReply(
        429, next,
        absl::StrCat("too many sign-in attempts from here; try again in ", retry_s, " s"));
    refused.headers["Retry-After"] = absl::StrCat(retry_s);
    return refused;
  }
  if (absl::Status allowed = context.authorizer->CheckToken(token, Role::kRead); !allowed.ok()) {
    return UiLoginReply(401, next, "that token does not give read access");
  }
  absl::StatusOr<Role> role = context.authorizer->RoleOf(token);
  if (!role.ok()) return UiLoginReply(401, next, "that token does not give read access");
  const std::string session = context.sessions->Create(*role, now);
  reply.headers["Set-Cookie"] =
      UiSessionCookie(session, context.tls, absl::ToInt64Seconds(context.sessions->lifetime()));
  reply.body = "signed in\n";
  return reply;
}

HttpReply Logout(const UiContext& context, const RestRequest& request) {
  const std::string session = UiSessionFromCookies(request.cookie);
  if (context.sessions != nullptr && !session.empty()) context.sessions->Revoke(session);
  HttpReply reply;
  reply.http_status = 303;
  reply.content_type = "text/plain; charset=utf-8";
  reply.headers = UiSecurityHeaders("");
  reply.headers["Location"] = "/ui/login";
  reply.headers["Set-Cookie"] = UiClearedCookie(context.tls);
  reply.body = "signed out\n";
  return reply;
}

}  // namespace collbench::ui_handlers

// SPDX-License-Identifier: Apache-2.0
#include "server/api/rest_router.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/api/authorize.h"
#include "server/api/rest_json.h"

namespace collbench {
namespace {

// An answer made at once, on the event loop.
HttpDispatch AnswerNow(HttpDispatch dispatch, HttpReply reply) {
  dispatch.on_loop = true;
  dispatch.answer = [reply = std::move(reply)] { return reply; };
  return dispatch;
}

}  // namespace

bool MatchTemplate(absl::string_view path_template, absl::string_view path, std::string* id) {
  const size_t open = path_template.find('{');
  if (open == absl::string_view::npos) return path == path_template;
  const size_t close = path_template.find('}', open);
  const absl::string_view prefix = path_template.substr(0, open);
  const absl::string_view suffix = path_template.substr(close + 1);
  if (!absl::StartsWith(path, prefix)) return false;
  const absl::string_view rest = path.substr(prefix.size());
  const size_t end = rest.find_first_of("/:");
  const absl::string_view segment = rest.substr(0, end);
  if (segment.empty()) return false;
  if (rest.substr(segment.size()) != suffix) return false;
  if (id != nullptr) *id = std::string(segment);
  return true;
}

RouteMatch MatchRoute(const std::vector<RestRoute>& routes, absl::string_view method,
                      absl::string_view path) {
  if (method == "HEAD") method = "GET";
  RouteMatch match;
  for (const RestRoute& route : routes) {
    std::string id;
    if (!MatchTemplate(route.path, path, &id)) continue;
    if (route.method == method) {
      match.route = &route;
      match.id = std::move(id);
      return match;
    }
    match.path_known = true;
    if (!match.allow.empty()) match.allow += ", ";
    match.allow += route.method;
  }
  return match;
}

RestRouter::RestRouter(std::vector<RestRoute> routes, const Authorizer* authorizer,
                       const BrowserGate* gate)
    : routes_(std::move(routes)), authorizer_(authorizer), gate_(gate) {}

HttpDispatch RestRouter::Route(const HttpRequest& in) {
  const RouteMatch match = MatchRoute(routes_, in.method, in.path);
  HttpDispatch dispatch;
  dispatch.label = match.route != nullptr ? match.route->Template() : "unmatched";
  dispatch.caller = CallerOf(authorizer_, in.authorization, in.peer);
  if (match.route == nullptr && match.path_known) {
    HttpReply reply = ErrorReply(
        405, absl::UnimplementedError(absl::StrCat(in.method, " is not allowed on ", in.path,
                                                   " (allowed: ", match.allow, ")")));
    reply.headers["Allow"] = match.allow;
    return AnswerNow(std::move(dispatch), std::move(reply));
  }
  if (match.route == nullptr) {
    return AnswerNow(std::move(dispatch), collbench::ErrorReply(absl::NotFoundError(absl::StrCat(
                                              "no route for ", in.method, " ", in.path))));
  }
  const RestRoute& route = *match.route;
  if (absl::Status allowed = Authorize(in, route); !allowed.ok()) {
    return AnswerNow(std::move(dispatch), Refusal(in, route, allowed));
  }
  // Admitted with a credential it needed, or where none is ever needed.
  dispatch.authenticated = authorizer_ == nullptr || authorizer_->Protects(route.role) ||
                           !authorizer_->Protects(Role::kRead);
  RestRequest request;
  request.id = match.id;
  request.body = in.body;
  request.caller = dispatch.caller;
  if (route.browser) request.cookie = in.cookie;
  if (absl::Status parsed = ParseQuery(in, route, &request); !parsed.ok()) {
    return AnswerNow(std::move(dispatch), collbench::ErrorReply(parsed));
  }
  dispatch.on_loop = route.on_loop;
  dispatch.answer = [handler = route.handler, request = std::move(request)] {
    return handler(request);
  };
  return dispatch;
}

HttpReply RestRouter::ErrorReply(int http_status, const absl::Status& status) {
  HttpReply reply = collbench::ErrorReply(status);
  reply.http_status = http_status;
  return reply;
}

absl::Status RestRouter::Authorize(const HttpRequest& in, const RestRoute& route) const {
  if (route.browser && in.authorization.empty() && gate_ != nullptr && authorizer_ != nullptr &&
      authorizer_->Protects(route.role)) {
    return gate_->Check(in.cookie, route.role);
  }
  return collbench::Authorize(authorizer_, in.authorization, route.role);
}

HttpReply RestRouter::Refusal(const HttpRequest& in, const RestRoute& route,
                              const absl::Status& why) const {
  if (route.browser && gate_ != nullptr) return gate_->Refusal(why, in.target);
  HttpReply reply = collbench::ErrorReply(why);
  if (absl::IsUnauthenticated(why))
    reply.headers["WWW-Authenticate"] = "Bearer realm=\"collbench\"";
  return reply;
}

absl::Status RestRouter::ParseQuery(const HttpRequest& in, const RestRoute& route,
                                    RestRequest* request) const {
  const size_t mark = in.target.find('?');
  if (mark == std::string::npos) return absl::OkStatus();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      ParseQueryString(absl::string_view(in.target).substr(mark + 1));
  if (!params.ok()) return params.status();
  for (auto& [raw_name, value] : *params) {
    const std::string name = SnakeCase(raw_name);
    const auto& known = route.query_params;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": not a query parameter of ", route.Template(),
          known.empty() ? " (it takes none)"
                        : absl::StrCat(" (it takes ", absl::StrJoin(known, ", "), ")")));
    }
    if (!request->query.emplace(name, std::move(value)).second) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": given more than once"));
    }
  }
  return absl::OkStatus();
}

}  // namespace collbench

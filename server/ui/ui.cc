// SPDX-License-Identifier: Apache-2.0
#include "server/ui/ui.h"

#include <string>
#include <utility>

#include "api/status_mapping.h"
#include "server/ui/ui_handlers.h"
#include "server/ui/ui_pages.h"
#include "server/ui/ui_session.h"

namespace collbench {

Ui::Ui(CoordinatorApi* api, const Authorizer* authorizer, const Clock* clock, UiOptions options)
    : sessions_(options.sessions) {
  context_.api = api;
  context_.authorizer = authorizer;
  context_.sessions = &sessions_;
  context_.clock = clock;
  context_.tls = options.tls;
}

namespace {

using Page = HttpReply (*)(const UiContext&, const RestRequest&);

struct PageRoute {
  const char* method;
  const char* path;
  Role role;
  const char* summary;  // also in docs/openapi.yaml
  std::vector<std::string> query_params;
  Page page;
  bool on_loop = false;
};

const std::vector<PageRoute>& PageRoutes() {
  namespace h = ui_handlers;
  constexpr Role kPublic = Role::kPublic, kRead = Role::kRead;
  static const std::vector<PageRoute>* const routes = new std::vector<PageRoute>{
      {"GET", "/ui/", kRead, "Browser: runs, newest first", {}, h::Runs},
      {"GET", "/ui/runs/{id}", kRead, "Browser: a run's report, live while it runs", {}, h::Run},
      {"GET", "/ui/runs/{id}/fragment", kRead, "Browser: a run's report body", {}, h::RunFragment},
      {"GET", "/ui/compare", kRead, "Browser: runs compared", {"runs"}, h::Compare},
      {"GET", "/ui/workflows", kRead, "Browser: workflows, newest first", {}, h::Workflows},
      {"GET",
       "/ui/workflows/{id}",
       kRead,
       "Browser: a workflow, live while it runs",
       {},
       h::Workflow},
      {"GET",
       "/ui/workflows/{id}/report",
       kRead,
       "Browser: a workflow's report page",
       {},
       h::WorkflowReport},
      {"GET",
       "/ui/schedules",
       kRead,
       "Browser: scheduled checks with their last outcomes",
       {},
       h::Schedules},
      {"GET",
       "/ui/schedules/{id}",
       kRead,
       "Browser: a schedule's settings and firings",
       {},
       h::Schedule},
      {"GET", "/ui/suites/{id}", kRead, "Browser: a stored suite run's report", {}, h::Suite},
      {"GET",
       "/ui/login",
       kPublic,
       "Browser: the token form",
       {"next"},
       h::LoginForm,
       /*on_loop=*/true},
      {"POST", "/ui/login", kPublic, "Browser: sign in with a read token", {}, h::Login},
      {"POST", "/ui/logout", kPublic, "Browser: sign out (ends the session)", {}, h::Logout},
  };
  return *routes;
}

}  // namespace

std::vector<RestRoute> Ui::Routes() {
  std::vector<RestRoute> routes;
  for (const PageRoute& p : PageRoutes()) {
    RestRoute route;
    route.method = p.method;
    route.path = p.path;
    route.role = p.role;
    route.summary = p.summary;
    route.query_params = p.query_params;
    route.on_loop = p.on_loop;
    route.browser = true;
    route.handler = [this, page = p.page](const RestRequest& request) {
      return page(context_, request);
    };
    routes.push_back(std::move(route));
  }
  return routes;
}

absl::Status Ui::Check(absl::string_view cookie_header, Role needed) const {
  absl::StatusOr<Role> role =
      sessions_.Find(UiSessionFromCookies(cookie_header), context_.clock->Now());
  if (!role.ok()) return role.status();
  if (needed == Role::kOperator && *role != Role::kOperator) {
    return absl::PermissionDeniedError(
        "this page needs a session signed in with an operator token");
  }
  return absl::OkStatus();
}

HttpReply Ui::Refusal(const absl::Status& why, absl::string_view target) const {
  const std::string message = absl::IsUnauthenticated(why)
                                  ? "Sign in with a token that has read access."
                                  : std::string(why.message());
  return UiLoginReply(HttpStatusFor(why.code()), SafeUiTarget(target), message);
}

}  // namespace collbench

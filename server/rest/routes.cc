// SPDX-License-Identifier: Apache-2.0
#include "server/rest/routes.h"

#include "absl/strings/match.h"
#include "server/rest/handlers.h"

namespace collbench {

absl::string_view AccessName(Access access) {
  switch (access) {
    case Access::kPublic:
      return "public";
    case Access::kRead:
      return "read";
    case Access::kOperator:
      return "operator";
  }
  return "operator";
}

const std::vector<RestRoute>& RestRoutes() {
  namespace h = rest_handlers;
  constexpr Access kPublic = Access::kPublic, kRead = Access::kRead, kOp = Access::kOperator;
  static const std::vector<RestRoute>* const routes = new std::vector<RestRoute>{
      {"POST", "/v1/runs", kOp, "Validate and queue a run", {}, h::CreateRun},
      {"GET",
       "/v1/runs",
       kRead,
       "List runs, newest first",
       {"page_size", "page_token", "filter"},
       h::ListRuns},
      {"GET", "/v1/runs/{id}", kRead, "Get a run", {}, h::GetRun},
      {"POST", "/v1/runs/{id}:cancel", kOp, "Cancel a run", {}, h::CancelRun},
      {"DELETE", "/v1/runs/{id}", kOp, "Delete a finished run and its results", {}, h::DeleteRun},
      {"GET",
       "/v1/runs/{id}/results",
       kRead,
       "Get a run and its per-size results",
       {},
       h::GetRunResults},
      {"GET",
       "/v1/runs/{id}:watch",
       kRead,
       "Stream a run's events (server-sent events)",
       {},
       h::WatchRun},
      {"POST",
       "/v1/workflows",
       kOp,
       "Check, plan and queue a workflow (matrix, suite, sweep, advice, report, check, hunt)",
       {},
       h::CreateWorkflow},
      {"GET",
       "/v1/workflows",
       kRead,
       "List workflows, newest first",
       {"page_size", "page_token", "filter"},
       h::ListWorkflows},
      {"GET", "/v1/workflows/{id}", kRead, "Get a workflow", {}, h::GetWorkflow},
      {"POST", "/v1/workflows/{id}:cancel", kOp, "Cancel a workflow and its run in progress", {},
       h::CancelWorkflow},
      {"DELETE", "/v1/workflows/{id}", kOp, "Delete a finished workflow (its runs stay)", {},
       h::DeleteWorkflow},
      {"GET",
       "/v1/workflows/{id}:watch",
       kRead,
       "Stream a workflow's versions (server-sent events)",
       {},
       h::WatchWorkflow},
      {"GET",
       "/v1/workflows/{id}/report",
       kRead,
       "Get a workflow's HTML report (as JSON: title, html)",
       {},
       h::GetWorkflowReport},
      {"POST",
       "/v1/baselines",
       kOp,
       "Keep the distributions of ended runs (or a workflow's runs) as a baseline",
       {},
       h::CreateBaseline},
      {"GET", "/v1/baselines", kRead, "List baselines by name (without their entries)",
       {"page_size", "page_token"}, h::ListBaselines},
      {"GET", "/v1/baselines/{id}", kRead, "Get a baseline with its entries", {}, h::GetBaseline},
      {"DELETE", "/v1/baselines/{id}", kOp, "Delete a baseline (its runs stay)", {},
       h::DeleteBaseline},
      {"POST", "/v1/schedules", kOp,
       "Check and store a schedule: a suite or run fired every period and checked against a "
       "baseline", {}, h::CreateSchedule},
      {"GET", "/v1/schedules", kRead, "List schedules by name", {"page_size", "page_token"},
       h::ListSchedules},
      {"GET", "/v1/schedules/{id}", kRead, "Get a schedule with its recent firings", {},
       h::GetSchedule},
      {"POST", "/v1/schedules/{id}:pause", kOp, "Pause a schedule (a running firing goes on)", {},
       h::PauseSchedule},
      {"POST", "/v1/schedules/{id}:resume", kOp, "Resume a schedule (next firing a period on)",
       {}, h::ResumeSchedule},
      {"DELETE", "/v1/schedules/{id}", kOp,
       "Delete a schedule (its workflows and runs stay; a running firing is cancelled)", {},
       h::DeleteSchedule},
      {"GET", "/v1/workers", kRead, "List workers", {"page_size", "page_token"}, h::ListWorkers},
      {"GET", "/v1/workers/{id}", kRead, "Get a worker", {}, h::GetWorker},
      {"POST", "/v1/workers/{id}:drain", kOp, "Drain a worker", {}, h::DrainWorker},
      {"POST", "/v1/workers/{id}:undrain", kOp, "Undrain a worker", {}, h::UndrainWorker},
      {"POST", "/v1/workers/{id}:clear", kOp,
       "Clear a SUSPECT worker's quarantine (it takes runs again)", {}, h::ClearWorker},
      {"DELETE", "/v1/workers/{id}", kOp, "Delete a worker that is gone", {}, h::DeleteWorker},
      {"GET", "/healthz", kPublic, "Liveness", {}, h::Healthz, /*quick=*/true},
      {"GET", "/readyz", kPublic, "Readiness", {}, h::Readyz, /*quick=*/true},
      {"GET", "/metrics", kPublic, "Prometheus metrics", {}, h::Metrics},
      {"GET", "/ui/", kRead, "Browser: runs, newest first", {}, h::UiRuns},
      {"GET", "/ui/runs/{id}", kRead, "Browser: a run's report, live while it runs", {}, h::UiRun},
      {"GET",
       "/ui/runs/{id}/fragment",
       kRead,
       "Browser: a run's report body",
       {},
       h::UiRunFragment},
      {"GET",
       "/ui/runs/{id}/events",
       kRead,
       "Browser: a run's events (server-sent events)",
       {},
       h::WatchRun},
      {"GET", "/ui/compare", kRead, "Browser: runs compared", {"runs"}, h::UiCompare},
      {"GET", "/ui/workflows", kRead, "Browser: workflows, newest first", {}, h::UiWorkflows},
      {"GET", "/ui/workflows/{id}", kRead, "Browser: a workflow, live while it runs", {},
       h::UiWorkflow},
      {"GET",
       "/ui/workflows/{id}/events",
       kRead,
       "Browser: a workflow's versions (server-sent events)",
       {},
       h::WatchWorkflow},
      {"GET", "/ui/workflows/{id}/report", kRead, "Browser: a workflow's report page", {},
       h::UiWorkflowReport},
      {"GET", "/ui/schedules", kRead, "Browser: scheduled checks with their last outcomes", {},
       h::UiSchedules},
      {"GET", "/ui/schedules/{id}", kRead, "Browser: a schedule's settings and firings", {},
       h::UiSchedule},
      {"GET", "/ui/suites/{id}", kRead, "Browser: a stored suite run's report", {}, h::UiSuite},
      {"GET", "/ui/login", kPublic, "Browser: the token form", {"next"}, h::UiLoginForm, /*quick=*/true},
      {"POST", "/ui/login", kPublic, "Browser: sign in with a read token", {}, h::UiLogin},
      {"POST", "/ui/logout", kPublic, "Browser: sign out (ends the session)", {}, h::UiLogout},
  };
  return *routes;
}

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

RouteMatch MatchRoute(absl::string_view method, absl::string_view path) {
  if (method == "HEAD") method = "GET";
  RouteMatch match;
  for (const RestRoute& route : RestRoutes()) {
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

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The browser pages under /ui/ (docs/design/workflows.md#reports): runs,
// a run's live report, comparisons, suite runs, workflows with their
// reports, schedules, and the login form (server/ui/ui_session.h). Each
// page reads through the API layer's handlers (server/api/handlers.h), as
// a gRPC or REST client would, and renders HTML with the analysis
// library's reports; the live pages follow the API's event streams at
// /ui/runs/{id}/events and /ui/workflows/{id}/events (browser bindings of
// WatchRun and WatchWorkflow in the method table).
//
// The Ui is also the router's BrowserGate: a /ui/ request without a bearer
// token is let in by its session cookie (server/ui/ui_sessions.h), and a
// refused one gets the login form.
//
// Ownership: owns the sessions; `api`, `authorizer` (may be null: no
// tokens) and `clock` are not owned and outlive the Ui.
// Thread safety: every method and route may be called from any thread.
#ifndef COLLBENCH_SERVER_UI_UI_H_
#define COLLBENCH_SERVER_UI_UI_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "server/api/handlers.h"
#include "server/api/rest_route.h"
#include "server/api/rest_router.h"
#include "server/auth/authorizer.h"
#include "server/ui/ui_sessions.h"

namespace collbench {

struct UiOptions {
  UiSessionOptions sessions;  // lifetime, cap, login throttle
  bool tls = false;           // served over TLS: the session cookie is Secure
};

// What the page handlers use (server/ui/ui_handlers.h).
struct UiContext {
  CoordinatorApi* api = nullptr;
  const Authorizer* authorizer = nullptr;  // null: no tokens
  UiSessions* sessions = nullptr;
  const Clock* clock = nullptr;
  bool tls = false;
};

class Ui final : public BrowserGate {
 public:
  Ui(CoordinatorApi* api, const Authorizer* authorizer, const Clock* clock, UiOptions options);

  // The /ui/ routes (pages, login, logout), browser routes all; the event
  // streams come with the API's routes.
  std::vector<RestRoute> Routes();

  absl::Status Check(absl::string_view cookie_header, Role needed) const override;
  HttpReply Refusal(const absl::Status& why, absl::string_view target) const override;

  // /ui/login attempts refused by the throttle (429) since the start.
  int64_t login_refusals() const { return sessions_.login_refusals(); }

 private:
  mutable UiSessions sessions_;  // Find() drops an expired session
  UiContext context_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_UI_UI_H_

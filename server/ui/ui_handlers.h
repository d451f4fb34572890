// SPDX-License-Identifier: Apache-2.0
// The /ui/ page handlers, one per route (Ui::Routes() says which is
// which). Each reads through the API's handlers with the caller of the
// request and answers an HTML page (server/ui/ui_pages.h); an error is a
// page too, with the HTTP status of its code. Internal to server/ui.
#ifndef COLLBENCH_SERVER_UI_UI_HANDLERS_H_
#define COLLBENCH_SERVER_UI_UI_HANDLERS_H_

#include <cstddef>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "server/api/call_context.h"
#include "server/api/rest_route.h"
#include "server/http/http_handler.h"
#include "server/ui/ui.h"

namespace collbench::ui_handlers {

// The API's largest page, what the pages read lists by.
inline constexpr int kUiPageSize = 1000;

// Every item a paged list method of the API (`list`: ListRuns,
// ListSchedules, ...) answers the caller of `request`, in its order, up to
// `limit` (a page more at most); `items` picks a page's items.
template <typename Req, typename Resp, typename Items>
auto ListEvery(const UiContext& context, const RestRequest& request,
               absl::StatusOr<Resp> (CoordinatorApi::*list)(const CallContext&, const Req&),
               Items items, size_t limit = std::numeric_limits<size_t>::max())
    -> absl::StatusOr<std::vector<typename std::decay_t<decltype(items(Resp()))>::value_type>> {
  std::vector<typename std::decay_t<decltype(items(Resp()))>::value_type> all;
  Req page_request;
  page_request.set_page_size(kUiPageSize);
  do {
    absl::StatusOr<Resp> page = (context.api->*list)(CallContext{request.caller}, page_request);
    if (!page.ok()) return page.status();
    all.insert(all.end(), items(*page).begin(), items(*page).end());
    page_request.set_page_token(page->next_page_token());
  } while (!page_request.page_token().empty() && all.size() < limit);
  return all;
}

// Runs (ui_runs.cc): the list, a run's report (live while it runs) and its
// body alone (what the live page fetches), a comparison, a suite run.
HttpReply Runs(const UiContext& context, const RestRequest& request);
HttpReply Run(const UiContext& context, const RestRequest& request);
HttpReply RunFragment(const UiContext& context, const RestRequest& request);
HttpReply Compare(const UiContext& context, const RestRequest& request);
HttpReply Suite(const UiContext& context, const RestRequest& request);

// Workflows (ui_workflows.cc).
HttpReply Workflows(const UiContext& context, const RestRequest& request);
HttpReply Workflow(const UiContext& context, const RestRequest& request);
HttpReply WorkflowReport(const UiContext& context, const RestRequest& request);

// Schedules (ui_schedules.cc).
HttpReply Schedules(const UiContext& context, const RestRequest& request);
HttpReply Schedule(const UiContext& context, const RestRequest& request);

// Signing in and out (ui_login.cc).
HttpReply LoginForm(const UiContext& context, const RestRequest& request);
HttpReply Login(const UiContext& context, const RestRequest& request);
HttpReply Logout(const UiContext& context, const RestRequest& request);

}  // namespace collbench::ui_handlers

#endif  // COLLBENCH_SERVER_UI_UI_HANDLERS_H_

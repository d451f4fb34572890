// SPDX-License-Identifier: Apache-2.0
// The /ui/schedules pages (docs/design/workflows.md#schedules): the scheduled checks with their
// last outcomes, and one schedule's settings and firings, each firing
// linked to its workflow. Outcomes are coloured by their badge (UiBadge):
// succeeded green, regression and failed red, skipped amber, a firing still
// waiting or running neutral.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "analysis/html.h"
#include "server/api/call_context.h"
#include "server/ui/ui_handlers.h"
#include "server/ui/ui_pages.h"

namespace collbench::ui_handlers {
namespace {

std::string IdOf(const std::string& name) {
  absl::string_view id = name;
  absl::ConsumePrefix(&id, "schedules/");
  return std::string(id);
}

// "1d", "7d", "6h", "1h30m", "90s".
std::string Every(const v1::ScheduleSpec& spec) {
  constexpr int64_t kSecondsPerDay = 86400;
  const int64_t every_s = spec.every_seconds();
  if (every_s > 0 && every_s % kSecondsPerDay == 0) {
    return absl::StrCat(every_s / kSecondsPerDay, "d");
  }
  return absl::FormatDuration(absl::Seconds(every_s));
}

// What each firing runs: "suite S (profile P)" or "run OPERATION on N ranks".
std::string What(const v1::ScheduleSpec& spec) {
  if (spec.has_suite()) {
    return absl::StrCat(
        "suite ", spec.suite().suite(),
        spec.suite().profile().empty() ? "" : absl::StrCat(" (", spec.suite().profile(), ")"));
  }
  return absl::StrCat("run ", spec.run().operation(), " on ", spec.run().ranks(),
                      spec.run().ranks() == 1 ? " rank" : " ranks");
}

std::string Baseline(const v1::ScheduleSpec& spec) {
  return spec.baseline().empty() ? "none: runs only, no check" : spec.baseline();
}

std::string NextFiring(const v1::Schedule& s) {
  return s.paused() ? "none (paused)" : absl::StrCat(UiTime(s.next_fire_time()), " UTC");
}

// The newest firing's outcome; while it is still waiting or running, the
// last ended one's after it. "-" before the first firing.
std::string LastOutcome(const v1::Schedule& s) {
  if (s.history_size() == 0) return s.last_outcome().empty() ? "-" : UiBadge(s.last_outcome());
  const std::string& newest = s.history(0).outcome();
  std::string out = UiBadge(newest);
  if ((newest == "waiting" || newest == "running") && !s.last_outcome().empty()) {
    absl::StrAppend(&out, " <span class=\"meta\">before: </span>", UiBadge(s.last_outcome()));
  }
  return out;
}

std::string ScheduleRow(const v1::Schedule& s) {
  const std::string id = IdOf(s.name());
  return absl::StrCat(
      "<tr><td>", UiLink("/ui/schedules/" + id, id), "</td><td>", HtmlEscape(Every(s.spec())),
      "</td><td>", HtmlEscape(What(s.spec())), "</td><td>", HtmlEscape(Baseline(s.spec())),
      "</td><td>", UiBadge(s.paused() ? "paused" : "active"), "</td><td>",
      HtmlEscape(NextFiring(s)), "</td><td>", LastOutcome(s), "</td><td class=\"num\">",
      s.regressions_found(), "</td><td>",
      s.history_size() == 0 ? "" : UiWorkflowLink(s.history(0).workflow()), "</td></tr>");
}

// The schedule's settings and counters, one per row.
std::string SettingsTable(const v1::Schedule& s) {
  const v1::ScheduleSpec& spec = s.spec();
  const std::string window = spec.window_seconds() > 0
                                 ? absl::FormatDuration(absl::Seconds(spec.window_seconds()))
                                 : "default (a quarter of the period, at most 10 minutes)";
  const std::string threshold = spec.threshold() > 0
                                    ? absl::StrFormat("%.3g%% slower", spec.threshold() * 100)
                                    : "5% slower (default)";
  const std::vector<std::vector<HtmlCell>> rows = {
      {{"every", "", ""}, {Every(spec), "", ""}},
      {{"runs", "", ""}, {What(spec), "", ""}},
      {{"baseline", "", ""}, {Baseline(spec), "", ""}},
      {{"regression threshold", "", ""}, {threshold, "", ""}},
      {{"workers", "", ""}, {spec.workers().empty() ? "any" : spec.workers(), "", ""}},
      {{"window (waits for idle workers)", "", ""}, {window, "", ""}},
      {{"state", "", ""}, {s.paused() ? "paused" : "active", "", ""}},
      {{"created", "", ""}, {absl::StrCat(UiTime(s.create_time()), " UTC"), "", ""}},
      {{"next firing", "", ""}, {NextFiring(s), "", ""}},
      {{"firings", "", ""}, {absl::StrCat(s.firings()), "", ""}},
      {{"regressions found", "", ""}, {absl::StrCat(s.regressions_found()), "", ""}},
      {{"last success", "", ""},
       {s.last_success_time().seconds() ? absl::StrCat(UiTime(s.last_success_time()), " UTC")
                                        : "none yet",
        "", ""}},
  };
  return HtmlCellRows({"setting", "value"}, rows);
}

// The recent firings, newest first.
std::string HistoryTable(const v1::Schedule& s) {
  if (s.history_size() == 0) return "<p class=\"note\">No firings yet.</p>\n";
  std::string out =
      "<table class=\"data\"><thead><tr><th>fired (UTC)</th><th>outcome</th><th>workflow</th>"
      "<th>regressions</th><th>reason</th></tr></thead><tbody>";
  for (const v1::ScheduleFiring& f : s.history()) {
    absl::StrAppend(&out, "<tr><td>", UiTime(f.time()), "</td><td>", UiBadge(f.outcome()),
                    "</td><td>", UiWorkflowLink(f.workflow()), "</td><td class=\"num\">",
                    f.regressions(), "</td><td class=\"wrap\">", HtmlEscape(f.reason()),
                    "</td></tr>");
  }
  return out + "</tbody></table>\n";
}

}  // namespace

HttpReply Schedules(const UiContext& context, const RestRequest& request) {
  absl::StatusOr<std::vector<v1::Schedule>> schedules = ListEvery(
      context, request, &CoordinatorApi::ListSchedules,
      [](const v1::ListSchedulesResponse& page) -> const auto& { return page.schedules(); });
  if (!schedules.ok()) return UiErrorReply(schedules.status());
  std::string body =
      "<p class=\"meta\">Scheduled checks: each fires a suite or a run every period when its "
      "workers are idle and checks the runs against its baseline. Create them over the API "
      "(POST /v1/schedules) or with <code>collbench schedule create</code>.</p>\n";
  if (schedules->empty()) {
    body += "<p class=\"note\">No schedules yet.</p>\n";
    return UiPageReply({"collbench schedules", kUiNav, body, "", ""});
  }
  absl::StrAppend(&body,
                  "<table class=\"data\"><thead><tr><th>schedule</th><th>every</th><th>runs</th>"
                  "<th>baseline</th><th>state</th><th>next firing</th><th>last outcome</th>"
                  "<th>regressions found</th><th>last workflow</th></tr></thead><tbody>");
  for (const v1::Schedule& s : *schedules) body += ScheduleRow(s);
  body += "</tbody></table>\n";
  return UiPageReply({"collbench schedules", kUiNav, body, "", ""});
}

HttpReply Schedule(const UiContext& context, const RestRequest& request) {
  v1::GetScheduleRequest get;
  get.set_name(absl::StrCat("schedules/", request.id));
  absl::StatusOr<v1::Schedule> s = context.api->GetSchedule(CallContext{request.caller}, get);
  if (!s.ok()) return UiErrorReply(s.status());
  const std::string body = absl::StrCat(
      "<p class=\"meta\">", UiBadge(s->paused() ? "paused" : "active"), " &middot; last outcome ",
      LastOutcome(*s), "</p>\n", SettingsTable(*s), "<h2>Firings</h2>\n",
      "<p class=\"meta\">The most recent, newest first; each ran as a workflow.</p>\n",
      HistoryTable(*s));
  return UiPageReply({absl::StrCat("collbench schedule ", request.id), kUiNav, body, "", ""});
}

}  // namespace collbench::ui_handlers

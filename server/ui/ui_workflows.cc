// SPDX-License-Identifier: Apache-2.0
// The /ui/workflows pages: the workflows a portal or the CLI made, each with
// its cells (linked to their runs), its output tables (a check's verdicts
// coloured) and its report; a workflow still going reloads itself as its
// events arrive.
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "analysis/html.h"
#include "api/convert.h"
#include "server/api/call_context.h"
#include "server/ui/ui_handlers.h"
#include "server/ui/ui_pages.h"
#include "server/ui/ui_session.h"
#include "server/workflows/hunts.h"
#include "server/workflows/workflow_plan.h"

namespace collbench::ui_handlers {
namespace {

// Reloads the page when the workflow changes (at most once a second) and
// stops once it has ended.
constexpr char kLiveWorkflowScript[] = R"js(
(function () {
  var box = document.getElementById('workflow');
  var seen = box.dataset.version, timer = null;
  var events = new EventSource(box.dataset.events);
  events.addEventListener('workflow', function (e) {
    var w = {};
    try { w = JSON.parse(e.data).snapshot || {}; } catch (x) {}
    if (String(w.version) === seen) return;
    var ended = ['WORKFLOW_SUCCEEDED', 'WORKFLOW_FAILED', 'WORKFLOW_CANCELLED'].indexOf(w.state) >= 0;
    if (ended) events.close();
    if (timer === null) timer = setTimeout(function () { location.reload(); }, ended ? 0 : 1000);
  });
})();
)js";

std::string StateWord(v1::WorkflowState state) {
  return absl::AsciiStrToLower(WorkflowStateName(state));
}

// The workflow's cells, each linked to its run; "" before it has any.
std::string CellsTable(const v1::Workflow& w) {
  if (w.cells_size() == 0) return "";
  std::string html =
      "<h2>Runs</h2>\n<table class=\"data\"><thead><tr><th>cell</th><th>run</th><th>state</th>"
      "<th>why</th></tr></thead><tbody>";
  for (const v1::WorkflowCell& c : w.cells()) {
    absl::string_view run = c.run();
    absl::ConsumePrefix(&run, "runs/");
    const std::string state = !c.skipped().empty() ? "skipped"
                              : c.run().empty()
                                  ? "planned"
                                  : absl::AsciiStrToLower(v1::RunState_Name(c.state()));
    absl::StrAppend(&html, "<tr><td>", HtmlEscape(c.label()), "</td><td>",
                    run.empty() ? "" : UiLink(absl::StrCat("/ui/runs/", run), std::string(run)),
                    "</td><td>", UiBadge(state), "</td><td class=\"wrap\">",
                    HtmlEscape(c.skipped().empty() ? c.error() : c.skipped()), "</td></tr>");
  }
  return html + "</tbody></table>\n";
}

}  // namespace

HttpReply Workflows(const UiContext& context, const RestRequest& request) {
  v1::ListWorkflowsRequest list;
  list.set_page_size(kUiPageSize);  // the newest, a page
  absl::StatusOr<v1::ListWorkflowsResponse> page =
      context.api->ListWorkflows(CallContext{request.caller}, list);
  if (!page.ok()) return UiErrorReply(page.status());
  std::string body = absl::StrCat(
      "<p class=\"meta\">", page->workflows_size(),
      " workflows, newest first. Create them over the API (POST /v1/workflows) or with "
      "<code>collbench suite run</code>, <code>matrix</code>, <code>sweep</code>, "
      "<code>advise</code> and <code>report</code>.</p>\n"
      "<table class=\"data\"><thead><tr><th>workflow</th><th>kind</th><th>state</th>"
      "<th>runs</th><th>created (UTC)</th><th>error</th></tr></thead><tbody>");
  for (const v1::Workflow& w : page->workflows()) {
    absl::StrAppend(&body, "<tr><td>", UiWorkflowLink(w.name()), "</td><td>", HtmlEscape(w.kind()),
                    "</td><td>", UiBadge(StateWord(w.state())), "</td><td class=\"num\">",
                    w.cells_done(), "/", w.cells_total(), "</td><td>", UiTime(w.create_time()),
                    "</td><td class=\"wrap\">", HtmlEscape(w.error()), "</td></tr>");
  }
  body += "</tbody></table>\n";
  return UiPageReply({"collbench workflows", kUiNav, body, "", ""});
}

HttpReply Workflow(const UiContext& context, const RestRequest& request) {
  v1::GetWorkflowRequest get;
  get.set_name(absl::StrCat("workflows/", request.id));
  absl::StatusOr<v1::Workflow> w = context.api->GetWorkflow(CallContext{request.caller}, get);
  if (!w.ok()) return UiErrorReply(w.status());
  const std::string base = absl::StrCat("/ui/workflows/", request.id);
  std::string body = absl::StrCat(
      "<div id=\"workflow\" data-events=\"", HtmlEscape(base + "/events"), "\" data-version=\"",
      w->version(), "\">\n<p class=\"meta\">", HtmlEscape(w->kind()), " ",
      UiBadge(StateWord(w->state())), " &middot; ", w->cells_done(), " of ", w->cells_total(),
      " runs ended &middot; created ", UiTime(w->create_time()), " UTC",
      w->end_time().seconds() ? absl::StrCat(" &middot; ended ", UiTime(w->end_time()), " UTC")
                              : "",
      "</p>\n");
  if (!w->error().empty()) {
    absl::StrAppend(&body, "<p class=\"why\">", HtmlEscape(w->error()), "</p>\n");
  }
  if (w->state() == v1::WORKFLOW_SUCCEEDED || w->state() == v1::WORKFLOW_FAILED) {
    absl::StrAppend(&body, "<p>", UiLink(base + "/report", "report: plots and tables"), "</p>\n");
  }
  for (const std::string& line : w->output().header()) {
    absl::StrAppend(&body, "<div class=\"meta\">", HtmlEscape(line), "</div>\n");
  }
  for (const v1::OutputTable& t : w->output().tables()) {
    // A check's verdicts (output.check's rows, in the "check" table) and a
    // hunt's suspects coloured.
    body += HtmlTable(TableFromProto(t), CheckVerdictClass);
  }
  // A hunt's heat map and per-worker distribution, once it has measured.
  if (w->output().has_hunt() &&
      w->output().hunt().pairs_size() + w->output().hunt().groups_size() > 0) {
    body += workflows::HuntFiguresHtml(w->output().hunt());
  }
  for (const v1::TuningFile& f : w->output().tuning_files()) {
    absl::StrAppend(&body, "<h2>", HtmlEscape(f.name()), "</h2>\n<pre>", HtmlEscape(f.content()),
                    "</pre>\n");
  }
  if (!w->output().tuning_refusal().empty()) {
    absl::StrAppend(&body,
                    "<p class=\"why\">no tuning file: ", HtmlEscape(w->output().tuning_refusal()),
                    "</p>\n");
  }
  body += CellsTable(*w);
  body += "</div>\n";
  HtmlPage page{absl::StrCat("collbench workflow ", request.id), kUiNav, body, "", ""};
  if (!IsFinalWorkflowState(w->state())) {
    page.script = kLiveWorkflowScript;
    page.script_nonce = NewScriptNonce();
  }
  return UiPageReply(page);
}

HttpReply WorkflowReport(const UiContext& context, const RestRequest& request) {
  v1::GetWorkflowReportRequest get;
  get.set_name(absl::StrCat("workflows/", request.id));
  absl::StatusOr<v1::WorkflowReport> report =
      context.api->GetWorkflowReport(CallContext{request.caller}, get);
  if (!report.ok()) return UiErrorReply(report.status());
  HttpReply reply;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = report->html();
  reply.headers = UiSecurityHeaders("");
  return reply;
}

}  // namespace collbench::ui_handlers

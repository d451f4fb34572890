// SPDX-License-Identifier: Apache-2.0
// The /ui/ runs pages: the report library's pages (analysis/report.h) of
// runs read through the API (GetRunResults, ListRuns): the runs list, a
// run's live page, comparisons and suite runs.
#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "analysis/html.h"
#include "analysis/report.h"
#include "analysis/suite.h"
#include "api/convert.h"
#include "api/status_mapping.h"
#include "common/units.h"
#include "server/api/call_context.h"
#include "server/ui/ui_handlers.h"
#include "server/ui/ui_pages.h"
#include "server/ui/ui_session.h"
#include "server/workflows/run_selection.h"

namespace collbench::ui_handlers {
namespace {

// The runs tables' head; RunRow() fills them.
constexpr char kRunsTableHead[] =
    "<table class=\"data\"><thead><tr><th>run</th><th>state</th><th>operation</th>"
    "<th>configuration</th><th>sizes</th><th>created (UTC)</th><th>suite run</th></tr></thead>"
    "<tbody>";
// Runs the list page shows.
constexpr size_t kRunsShown = 1000;

// Follows the run's event stream and swaps the report's body for a fresh
// server-rendered one as results arrive; stops when the run has ended.
constexpr char kLiveRunScript[] = R"js(
(function () {
  var box = document.getElementById('report');
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(box.dataset.fragment, {credentials: 'same-origin', cache: 'no-store'})
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
      .then(function (html) {
        // Sections the reader opened stay open.
        var open = Array.from(box.querySelectorAll('details')).map(function (d) { return d.open; });
        box.innerHTML = html;
        box.querySelectorAll('details').forEach(function (d, i) {
          if (i < open.length) d.open = open[i];
        });
      })
      .catch(function (e) { console.warn('collbench: refresh failed: ' + e); })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var events = new EventSource(box.dataset.events);
  events.addEventListener('result', refresh);
  events.addEventListener('progress', refresh);
  events.addEventListener('state', function (e) {
    var state = '';
    try { state = JSON.parse(e.data).stateChange.state; } catch (x) {}
    if (state === 'SUCCEEDED' || state === 'FAILED' || state === 'CANCELLED') events.close();
    refresh();
  });
})();
)js";

bool Ended(v1::RunState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

// The run named `name` ("runs/{id}") with its results, as GetRunResults
// answers the caller of `request`.
absl::StatusOr<RunWithResults> LoadRun(const UiContext& context, const RestRequest& request,
                                       const std::string& name) {
  v1::GetRunResultsRequest get;
  get.set_name(name);
  absl::StatusOr<v1::GetRunResultsResponse> run =
      context.api->GetRunResults(CallContext{request.caller}, get);
  if (!run.ok()) return run.status();
  return RunWithResults{std::move(*run->mutable_run()),
                        {std::make_move_iterator(run->mutable_results()->begin()),
                         std::make_move_iterator(run->mutable_results()->end())}};
}

// Every stored run, newest first, up to `limit`.
absl::StatusOr<std::vector<v1::Run>> ListAll(const UiContext& context, const RestRequest& request,
                                             size_t limit) {
  return ListEvery(
      context, request, &CoordinatorApi::ListRuns,
      [](const v1::ListRunsResponse& page) -> const auto& { return page.runs(); }, limit);
}

std::string Id(const v1::Run& run) {
  absl::string_view name = run.name();
  absl::ConsumePrefix(&name, "runs/");
  return std::string(name);
}

std::string RunRow(const v1::Run& run) {
  const v1::RunSpec& s = run.spec();
  const std::string state = absl::AsciiStrToLower(v1::RunState_Name(run.state()));
  auto suite = s.labels().find("suite-run");
  auto cell = s.labels().find("suite-cell");
  std::string labels;
  if (suite != s.labels().end()) labels = UiLink("/ui/suites/" + suite->second, suite->second);
  if (cell != s.labels().end()) absl::StrAppend(&labels, " ", HtmlEscape(cell->second));
  return absl::StrCat(
      "<tr><td>", UiLink("/ui/runs/" + Id(run), Id(run)), "</td><td><span class=\"badge ", state,
      "\"", run.waiting_reason().empty() ? "" : absl::StrCat(" title=\"", HtmlEscape(run.waiting_reason()), "\""),
      ">", state, "</span>",
      run.waiting_reason().empty()
          ? ""
          : absl::StrCat("<div class=\"why\">", HtmlEscape(run.waiting_reason()), "</div>"),
      "</td><td>", HtmlEscape(s.operation()), "</td><td>",
      HtmlEscape(absl::StrCat(MpiName(s.mpi()), "/", s.backend().empty() ? "mpi" : s.backend(),
                              "/", TransportText(run), " ", PlacementName(s.placement()),
                              " ", s.ranks(), s.ranks() == 1 ? " rank" : " ranks")),
      "</td><td class=\"num\">", run.sizes_done(), "/", run.sizes_total(), "</td><td>",
      HtmlEscape(absl::FormatTime("%Y-%m-%d %H:%M:%S", TimeFromTimestamp(run.create_time()),
                                  absl::UTCTimeZone())),
      "</td><td class=\"wrap\">", labels, "</td></tr>");
}

}  // namespace

HttpReply Runs(const UiContext& context, const RestRequest& request) {
  absl::StatusOr<std::vector<v1::Run>> runs = ListAll(context, request, kRunsShown);
  if (!runs.ok()) return UiErrorReply(runs.status());
  std::string body = absl::StrCat(
      "<form class=\"compare\" method=\"get\" action=\"/ui/compare\"><label>Compare runs "
      "<input type=\"text\" name=\"runs\" size=\"60\" placeholder=\"ID,ID,… (the first is "
      "the baseline)\"></label> <button type=\"submit\">Compare</button></form>\n"
      "<p class=\"meta\">",
      runs->size(),
      " runs, newest first.</p>\n", kRunsTableHead);
  for (const v1::Run& run : *runs) body += RunRow(run);
  body += "</tbody></table>\n";
  return UiPageReply({"collbench runs", kUiNav, body, "", ""});
}

// Where every rank is while the run goes on (and, in a run a hang
// diagnosis ended, where each stood), the ranks behind marked.
std::string RankProgressHtml(const v1::Run& run) {
  if (run.rank_progress_size() == 0) return "";
  std::string html =
      "<h2>Ranks</h2>\n<table class=\"data ranks\"><thead><tr><th>rank</th><th>host</th>"
      "<th>worker</th><th>size</th><th>iteration</th><th>phase</th><th>process</th>"
      "<th>last moved (UTC)</th></tr></thead><tbody>";
  for (const v1::RankProgress& r : run.rank_progress()) {
    absl::StrAppend(
        &html, "<tr", r.behind() ? " class=\"verdict-regression\"" : "", "><td class=\"num\">",
        r.rank(), r.behind() ? " (behind)" : "", "</td><td>", HtmlEscape(r.host()), "</td><td>",
        HtmlEscape(r.worker()), "</td><td>", HtmlEscape(r.operation()), " ",
        FormatBytes(r.bytes()), "</td><td class=\"num\">", r.iteration(),
        r.iterations() > 0 ? absl::StrCat("/", r.iterations()) : "", "</td><td>",
        HtmlEscape(r.phase()), "</td><td>", HtmlEscape(r.process()), "</td><td>",
        UiTime(r.update_time()), "</td></tr>");
  }
  html += "</tbody></table>\n";
  return html;
}

HttpReply Run(const UiContext& context, const RestRequest& request) {
  absl::StatusOr<RunWithResults> run = LoadRun(context, request, absl::StrCat("runs/", request.id));
  if (!run.ok()) return UiErrorReply(run.status());
  const std::string base = absl::StrCat("/ui/runs/", request.id);
  HtmlPage page{RunsReportTitle({*run}), kUiNav,
                absl::StrCat("<div id=\"report\" data-events=\"", HtmlEscape(base + "/events"),
                             "\" data-fragment=\"", HtmlEscape(base + "/fragment"), "\">",
                             RankProgressHtml(run->run), RunsReportBody({*run}), "</div>\n"),
                "", ""};
  if (!Ended(run->run.state())) {
    page.script = kLiveRunScript;
    page.script_nonce = NewScriptNonce();
  }
  return UiPageReply(page);
}

HttpReply RunFragment(const UiContext& context, const RestRequest& request) {
  absl::StatusOr<RunWithResults> run = LoadRun(context, request, absl::StrCat("runs/", request.id));
  if (!run.ok()) return UiErrorReply(run.status());
  HttpReply reply;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = RankProgressHtml(run->run) + RunsReportBody({*run});
  reply.headers = UiSecurityHeaders("");
  return reply;
}

HttpReply Compare(const UiContext& context, const RestRequest& request) {
  const auto given = request.query.find("runs");
  std::vector<std::string> ids = absl::StrSplit(given == request.query.end() ? "" : given->second,
                                                ',', absl::SkipWhitespace());
  if (ids.empty()) {
    return UiErrorReply(absl::InvalidArgumentError("runs: name the runs to compare, "
                                                   "?runs=ID,ID,… (the first is the baseline)"));
  }
  // Each run once, and no more than a request may name, before any is read.
  for (std::string& id : ids) id = workflows::RunNameOf(id);
  absl::StatusOr<std::vector<std::string>> distinct = context.api->DistinctRuns(ids, "runs");
  if (!distinct.ok()) return UiErrorReply(distinct.status());
  std::vector<RunWithResults> runs;
  for (const std::string& name : *distinct) {
    absl::StatusOr<RunWithResults> run = LoadRun(context, request, name);
    if (!run.ok()) return UiErrorReply(run.status());
    runs.push_back(*std::move(run));
  }
  return UiPageReply({RunsReportTitle(runs), kUiNav, RunsReportBody(runs), "", ""});
}

HttpReply Suite(const UiContext& context, const RestRequest& request) {
  absl::StatusOr<std::vector<v1::Run>> all =
      ListAll(context, request, std::numeric_limits<size_t>::max());
  if (!all.ok()) return UiErrorReply(all.status());
  std::vector<RunWithResults> runs;
  for (const v1::Run& run : *all) {
    auto label = run.spec().labels().find("suite-run");
    if (label == run.spec().labels().end() || label->second != request.id) continue;
    absl::StatusOr<RunWithResults> loaded = LoadRun(context, request, run.name());
    if (!loaded.ok()) return UiErrorReply(loaded.status());
    runs.push_back(*std::move(loaded));
  }
  if (runs.empty()) {
    return UiErrorReply(absl::NotFoundError(absl::StrCat("no runs of suite run ", request.id)));
  }
  std::reverse(runs.begin(), runs.end());  // oldest first, as `suite show` reads them
  absl::StatusOr<SuiteView> view = ViewSuiteRun(runs);
  if (!view.ok()) return UiErrorReply(view.status());
  // Each cell's run, to open it on its own page.
  std::string cells = absl::StrCat("<h2>Runs</h2>\n", kRunsTableHead);
  for (const RunWithResults& run : runs) cells += RunRow(run.run);
  cells += "</tbody></table>\n";
  return UiPageReply({SuiteReportTitle(request.id, *view), kUiNav,
                      SuiteReportBody(request.id, *view, runs) + cells, "", ""});
}

}  // namespace collbench::ui_handlers

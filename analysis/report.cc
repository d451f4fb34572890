// SPDX-License-Identifier: Apache-2.0
#include "analysis/report.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/advisor.h"
#include "analysis/report_sections.h"

namespace collbench {
namespace {

namespace ri = report_internal;

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string StateBadge(v1::RunState state) {
  const std::string name = absl::AsciiStrToLower(v1::RunState_Name(state));
  return absl::StrCat("<span class=\"badge ", name, "\" data-state=\"", name, "\">", name,
                      "</span>");
}

// Series names: the configuration fields that differ, the operation first
// when the runs measure different ones; one run is named by its setup.
std::vector<std::string> SeriesNames(const std::vector<RunWithResults>& runs) {
  if (runs.size() == 1) {
    const v1::RunSpec& s = runs[0].run.spec();
    return {absl::StrCat(s.operation(), " ", MpiName(s.mpi()), "/", TransportText(runs[0].run),
                         " ", s.ranks(), s.ranks() == 1 ? " rank" : " ranks")};
  }
  std::vector<std::string> names = DistinctConfigNames(runs);
  std::set<std::string> operations;
  for (const RunWithResults& r : runs) operations.insert(r.run.spec().operation());
  if (operations.size() > 1) {
    for (size_t i = 0; i < runs.size(); ++i) {
      names[i] = absl::StrCat(runs[i].run.spec().operation(), " ", names[i]);
    }
  }
  return names;
}

// A banner when the runs were timed by different iteration synchronization
// (docs/design/data-plane.md#iteration-synchronization): their ratios would
// compare two methods, not configurations.
std::string SyncWarning(const std::vector<RunWithResults>& runs) {
  std::map<std::string, std::vector<size_t>> by_sync;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const auto& [field, value] : ConfigFields(runs[i].run)) {
      if (field == "sync") by_sync[value].push_back(i);
    }
  }
  if (by_sync.size() < 2) return "";
  std::vector<std::string> groups;
  for (const auto& [sync, indices] : by_sync) {
    groups.push_back(absl::StrCat(sync, ": [", absl::StrJoin(indices, "], ["), "]"));
  }
  return absl::StrCat(
      "<p class=\"warning\">These runs differ in iteration synchronization (",
      HtmlEscape(absl::StrJoin(groups, "; ")),
      "). barrier times one isolated operation, none lets iterations overlap: the ratios "
      "below mix two methods and say nothing about the configurations alone.</p>\n");
}

std::string Summary(const std::vector<RunWithResults>& runs, const std::vector<std::string>& names) {
  std::string out = "<ul class=\"runs\">";
  for (size_t i = 0; i < runs.size(); ++i) {
    const v1::Run& run = runs[i].run;
    absl::StrAppend(&out, "<li>", runs.size() > 1 ? absl::StrCat("[", i, "] ") : "",
                    "<strong>", HtmlEscape(run.name()), "</strong> ", HtmlEscape(names[i]), " ",
                    StateBadge(run.state()), " <span class=\"progress\">",
                    runs[i].results.size(), " of ",
                    run.sizes_total() > 0 ? absl::StrCat(run.sizes_total())
                                          : absl::StrCat(runs[i].results.size()),
                    " sizes</span>");
    if (!run.error().empty()) absl::StrAppend(&out, " — ", HtmlEscape(run.error()));
    if (!run.waiting_reason().empty()) {
      absl::StrAppend(&out, " — <span class=\"why\">", HtmlEscape(run.waiting_reason()), "</span>");
    }
    out += "</li>";
  }
  return out + "</ul>\n";
}

// The advisor's verdict on the runs that can be held against each other
// (same operation and rank count); nothing when no two can.
std::string AdviceSection(const std::vector<RunWithResults>& runs) {
  const Advice advice = Advise(runs);
  if (advice.groups.empty()) return "";
  std::string out =
      "<h2>Advice: the fastest configuration per size range</h2>\n<p class=\"meta\">As "
      "<code>collbench advise</code> prints it: significant where the two means' 95% "
      "intervals do not overlap.</p>\n";
  for (const Table& table : AdviceTables(advice)) out += HtmlTable(table);
  return out;
}

}  // namespace

std::string RunsReportTitle(const std::vector<RunWithResults>& runs) {
  if (runs.empty()) return "collbench report";
  if (runs.size() == 1) {
    return absl::StrCat(runs[0].run.name(), " ", runs[0].run.spec().operation());
  }
  std::set<std::string> operations;
  for (const RunWithResults& r : runs) operations.insert(r.run.spec().operation());
  return absl::StrCat(absl::StrJoin(operations, ", "), ": ", runs.size(), " runs compared");
}

std::string RunsReportBody(const std::vector<RunWithResults>& runs) {
  if (runs.empty()) return "<p class=\"note\">no runs to report</p>\n";
  const std::vector<std::string> names = SeriesNames(runs);
  std::string out = Summary(runs, names) + SyncWarning(runs);
  out += ri::SizePlots(runs, names, "Latency and bandwidth");
  out += ri::DistributionPlots(runs, names);
  if (runs.size() > 1) {
    absl::StrAppend(&out, "<h2>Against the baseline [0]</h2>\n", ri::RatioTable(runs, names));
    out += AdviceSection(runs);
  }
  out += "<h2>Results</h2>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs.size() == 1) {
      out += ri::ResultsTable(runs[i]);
      continue;
    }
    absl::StrAppend(&out, "<details><summary>[", i, "] ", HtmlEscape(runs[i].run.name()), " ",
                    HtmlEscape(names[i]), "</summary>", ri::ResultsTable(runs[i]), "</details>\n");
  }
  out += ri::PerRankSection(runs, names);
  out += ri::EnvironmentSection(runs, names);
  return out;
}

std::string SuiteReportTitle(const std::string& suite_run, const SuiteView& view) {
  return absl::StrCat("suite ", view.suite.name, " (", suite_run, ")");
}

std::string SuiteReportBody(const std::string& suite_run, const SuiteView& view,
                            const std::vector<RunWithResults>& runs) {
  const Suite& suite = view.suite;
  std::string out = absl::StrCat(
      "<p class=\"meta\"><strong>Paper:</strong> ", HtmlEscape(suite.paper), " (seed ",
      HtmlEscape(suite.seed), ")<br><strong>Question:</strong> ", HtmlEscape(suite.question),
      "<br><strong>Profile:</strong> ", HtmlEscape(view.profile), ", ", runs.size(),
      " runs</p>\n");
  if (!suite.notes.empty()) {
    out += "<ul class=\"notes\">";
    for (const std::string& note : suite.notes) absl::StrAppend(&out, "<li>", HtmlEscape(note), "</li>");
    out += "</ul>\n";
  }
  int agree = 0, disagree = 0;
  std::string tables;
  for (const Table& table : view.tables) {
    tables += HtmlTable(table);
    const size_t col = std::find(table.columns.begin(), table.columns.end(), "agrees") -
                       table.columns.begin();
    for (const auto& row : table.rows) {
      if (col >= row.size()) continue;
      agree += Occurrences(row[col], "yes (");
      disagree += Occurrences(row[col], "no (");
    }
  }
  absl::StrAppend(&out, "<h2>Tables</h2>\n<p class=\"meta\">Paper checks: ", agree,
                  " agree, ", disagree,
                  " disagree (rows in green agree with the paper, rows in red disagree in at "
                  "least one check).</p>\n",
                  tables);
  // The runs' curves, one plot pair per operation, each series a cell.
  std::map<std::string, std::vector<RunWithResults>> by_operation;
  for (const RunWithResults& r : runs) by_operation[r.run.spec().operation()].push_back(r);
  for (const auto& [operation, group] : by_operation) {
    std::vector<std::string> names;
    for (const RunWithResults& r : group) {
      auto cell = r.run.spec().labels().find("suite-cell");
      names.push_back(cell != r.run.spec().labels().end() ? cell->second : r.run.name());
    }
    out += ri::SizePlots(group, names, absl::StrCat(operation, ": each cell's curves"));
  }
  return out;
}

std::string RunsReport(const std::vector<RunWithResults>& runs) {
  return RenderHtmlPage({RunsReportTitle(runs), "", RunsReportBody(runs), "", ""});
}

std::string SuiteReport(const std::string& suite_run, const SuiteView& view,
                        const std::vector<RunWithResults>& runs) {
  return RenderHtmlPage(
      {SuiteReportTitle(suite_run, view), "", SuiteReportBody(suite_run, view, runs), "", ""});
}

}  // namespace collbench

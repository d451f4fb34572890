// SPDX-License-Identifier: Apache-2.0
// What a workflow's runs become (workflow_plan.h): its tables, tuning files
// and page. Apart from the planning, which makes the runs.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "analysis/advisor.h"
#include "analysis/report.h"
#include "analysis/suite.h"
#include "server/workflows/hunts.h"
#include "server/workflows/workflow_plan.h"

namespace collbench::workflows {
namespace {

void AddAdvice(const std::vector<RunWithResults>& runs, v1::WorkflowOutput* output) {
  const Advice advice = Advise(runs);
  for (const Table& t : AdviceTables(advice)) *output->add_tables() = TableToProto(t);
  if (advice.groups.empty()) {
    output->set_tuning_refusal(kNothingToCompare);
    return;
  }
  absl::StatusOr<std::vector<TuningFileText>> files = TuningFiles(advice);
  if (!files.ok()) {
    output->set_tuning_refusal(std::string(files.status().message()));
    return;
  }
  for (const auto& [name, text] : *files) {
    v1::TuningFile* file = output->add_tuning_files();
    file->set_name(name);
    file->set_content(text);
  }
}

}  // namespace

v1::WorkflowOutput RenderOutput(const v1::Workflow& workflow,
                                const std::vector<RunWithResults>& runs) {
  v1::WorkflowOutput output;
  const v1::WorkflowSpec& spec = workflow.spec();
  switch (spec.kind_case()) {
    case v1::WorkflowSpec::kMatrix: {
      std::vector<std::string> configs;
      for (const RunWithResults& run : runs) {
        auto it = run.run.spec().labels().find("matrix-config");
        configs.push_back(it == run.run.spec().labels().end() ? run.run.name() : it->second);
      }
      *output.add_tables() = TableToProto(BestWorstTable(runs, configs));
      break;
    }
    case v1::WorkflowSpec::kSuite: {
      absl::StatusOr<Suite> suite = FindSuite(spec.suite().suite());
      absl::StatusOr<std::vector<SuiteCell>> cells =
          suite.ok() ? ExpandSuite(*suite, SuiteProfile(spec.suite()))
                     : absl::StatusOr<std::vector<SuiteCell>>(suite.status());
      if (!cells.ok()) break;
      SuiteOutcome outcome;
      for (const v1::WorkflowCell& cell : workflow.cells()) {
        if (!cell.skipped().empty()) outcome.skipped[cell.label()] = cell.skipped();
      }
      for (const RunWithResults& run : runs) {
        auto it = run.run.spec().labels().find("suite-cell");
        if (it != run.run.spec().labels().end()) outcome.runs[it->second] = run;
      }
      for (const Table& t : RenderSuite(*suite, *cells, outcome)) {
        *output.add_tables() = TableToProto(t);
      }
      break;
    }
    case v1::WorkflowSpec::kSweep:
    case v1::WorkflowSpec::kAdvice:
      AddAdvice(runs, &output);
      break;
    case v1::WorkflowSpec::kReport:
      output.set_has_report(true);
      break;
    case v1::WorkflowSpec::kCheck:  // the manager adds the check (it reads the baseline)
    case v1::WorkflowSpec::kHunt:   // and a hunt's output (workflow_hunt.cc)
    case v1::WorkflowSpec::KIND_NOT_SET:
      break;
  }
  return output;
}

absl::StatusOr<std::string> RenderReport(const v1::Workflow& workflow,
                                         const std::vector<RunWithResults>& runs) {
  // A hunt's page is of its output (half a million runs for a large one).
  if (workflow.spec().has_hunt()) return HuntReportHtml(workflow);
  if (runs.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(workflow.name(), " has no run with results to report on yet"));
  }
  if (workflow.spec().has_suite()) {
    absl::StatusOr<SuiteView> view = ViewSuiteRun(runs);
    if (!view.ok()) return view.status();
    const std::string id(absl::StripPrefix(workflow.name(), "workflows/"));
    return SuiteReport(id, *view, runs);
  }
  return RunsReport(runs);
}

Table BestWorstTable(const std::vector<RunWithResults>& runs,
                     const std::vector<std::string>& configs) {
  struct Entry {
    std::string config;
    const v1::SizeResult* result;
  };
  using Key = std::tuple<std::string, std::string, uint64_t>;  // op, dtype, bytes
  std::map<Key, std::vector<Entry>> cells;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const v1::SizeResult& r : runs[i].results) {
      cells[{r.operation(), r.dtype(), r.bytes()}].push_back({configs[i], &r});
    }
  }
  Table table{"best-worst", "fastest and slowest configuration per operation and size",
              {"operation", "bytes", "fastest", "avg_us", "slowest", "avg_us", "ratio"}, {},
              {kFastestLegend}};
  for (const auto& [key, list] : cells) {
    std::vector<const v1::SizeResult*> results;
    for (const Entry& e : list) results.push_back(e.result);
    const Entry* best = &list[0];
    const Entry* worst = &list[0];
    for (const Entry& e : list) {
      if (e.result->avg_s() < best->result->avg_s()) best = &e;
      if (e.result->avg_s() > worst->result->avg_s()) worst = &e;
    }
    // The lowest mean is always shown; its name only where the win is significant.
    const std::string fastest = SignificantFastest(results) < 0 ? "~" : best->config;
    const double best_s = best->result->avg_s(), worst_s = worst->result->avg_s();
    table.rows.push_back({std::get<0>(key), absl::StrCat(std::get<2>(key)), fastest,
                          absl::StrFormat("%.2f", best_s * 1e6), worst->config,
                          absl::StrFormat("%.2f", worst_s * 1e6),
                          absl::StrFormat("%.2fx", best_s > 0 ? worst_s / best_s : 0.0)});
  }
  return table;
}

}  // namespace collbench::workflows

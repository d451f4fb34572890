// SPDX-License-Identifier: Apache-2.0
#include "client/report_command.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/report.h"
#include "analysis/suite.h"
#include "common/atomic_file.h"
#include "common/flag_parser.h"
#include "client/workflow_client.h"

namespace collbench {
namespace {

constexpr char kReportUsage[] = R"(usage: collbench report RUN... -o FILE.html
       collbench report --suite ID -o FILE.html
       collbench report --sweep ID -o FILE.html
One self-contained HTML page (inline SVG plots, no script, nothing fetched):
latency and bus bandwidth against size, latency distributions, ratios
against the first run, the advisor's fastest configuration per size range,
the per-rank view and the environment fields that differ (for a sweep, its
runs: one per algorithm); for a suite run, its tables with agreement marked and skipped cells
named. The coordinator makes the page (a report workflow over the runs
named; a suite run's or sweep's own page) and serves the same at /ui/.
)";

// The page of a stored workflow (a suite run's, a sweep's), or of a new
// report workflow over the runs named.
absl::StatusOr<std::string> Page(CoordinatorClient& client, const std::string& workflow,
                                 const std::vector<std::string>& runs) {
  std::string name = workflow;
  if (name.empty()) {
    v1::WorkflowSpec spec;
    for (const std::string& run : runs) spec.mutable_report()->add_runs(RunName(run));
    absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
    if (!done.ok()) return done.status();
    if (done->state() != v1::WORKFLOW_SUCCEEDED) {
      return absl::FailedPreconditionError(absl::StrCat(done->name(), ": ", done->error()));
    }
    name = done->name();
  }
  absl::FPrintF(stderr, "fetching the page of %s\n", WorkflowName(name));
  v1::GetWorkflowReportRequest request;
  request.set_name(WorkflowName(name));
  v1::WorkflowReport report;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::GetWorkflowReport, request, &report);
      !s.ok()) {
    return s;
  }
  return report.html();
}

}  // namespace

int ReportCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string output, suite, sweep;
  FlagParser flags;
  flags.String("output", &output, "the HTML file to write (also -o)");
  flags.String("suite", &suite, "a stored suite run's id (as `suite show` takes it)");
  flags.String("sweep", &sweep, "a stored sweep's id (as `advise --sweep` takes it)");
  std::vector<std::string> spelled = args;
  for (std::string& arg : spelled) {
    if (arg == "-o") arg = "--output";
  }
  if (absl::Status s = flags.Parse(spelled); !s.ok()) return Report(s);
  if (flags.help()) {
    absl::PrintF("%s%s", kReportUsage, flags.Usage());
    return kExitOk;
  }
  const std::vector<std::string>& runs = flags.rest();
  const int sources = (runs.empty() ? 0 : 1) + (suite.empty() ? 0 : 1) + (sweep.empty() ? 0 : 1);
  if (sources == 0) {
    std::fputs(kReportUsage, stderr);
    return Report(
        absl::InvalidArgumentError("report: name at least one run, or --suite ID, or --sweep ID"));
  }
  if (sources > 1) {
    return Report(
        absl::InvalidArgumentError("report: name runs, --suite ID or --sweep ID, only one of them"));
  }
  if (output.empty()) {
    return Report(absl::InvalidArgumentError("report: -o FILE.html is required"));
  }
  // Before any run is fetched: a folder that is not there is a typo.
  if (absl::Status folder = CheckParentFolder(output); !folder.ok()) {
    return Report(absl::InvalidArgumentError(absl::StrCat("-o ", folder.message())));
  }
  absl::StatusOr<std::string> page =
      Page(client, !suite.empty() ? suite : sweep, runs);
  if (!page.ok()) return Report(page.status());
  if (absl::Status s = WriteFileAtomically(output, *page); !s.ok()) {
    // A file that cannot be created is bad input of -o.
    return Report(absl::IsInvalidArgument(s)
                      ? absl::InvalidArgumentError(absl::StrCat("-o: ", s.message()))
                      : s);
  }
  absl::FPrintF(stderr, "wrote %s (%d KiB)\n", output, (page->size() + 1023) / 1024);
  return kExitOk;
}

}  // namespace collbench

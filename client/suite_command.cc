// SPDX-License-Identifier: Apache-2.0
#include "client/suite_command.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/suite.h"
#include "client/format.h"
#include "api/convert.h"
#include "client/workflow_client.h"
#include "common/flag_parser.h"

namespace collbench {
namespace {

constexpr char kSuiteUsage[] = R"(usage: collbench suite list
       collbench suite run NAME [--profile ci|paper] [--dry-run]
       collbench suite show ID
A suite is one seed paper's experiment (the seeds are the five published
studies collbench reproduces; docs/suites.md names them): the runs it makes,
its tables and the paper's values, with a column saying whether this run
agrees.
)";

// Prints the tables and a closing line counting agreement.
void PrintTables(const std::vector<Table>& tables) {
  int yes = 0, no = 0;
  for (const Table& t : tables) {
    absl::PrintF("\n%s", FormatTableText(t));
    auto col = std::find(t.columns.begin(), t.columns.end(), "agrees");
    if (col == t.columns.end()) continue;
    for (const auto& row : t.rows) {
      const std::string& cell = row[col - t.columns.begin()];
      for (size_t at = 0; (at = cell.find("yes", at)) != std::string::npos; ++at) ++yes;
      for (size_t at = 0; (at = cell.find("no ", at)) != std::string::npos; ++at) ++no;
    }
  }
  absl::PrintF("\n# paper checks: %d agree, %d disagree\n", yes, no);
}

int List() {
  Table table{"", "built-in suites", {"suite", "seed", "parts", "cells(ci)", "question"}, {}, {}};
  for (const Suite& suite : BuiltinSuites()) {
    absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(suite, "ci");
    table.rows.push_back({suite.name, suite.seed, absl::StrCat(suite.parts.size()),
                          cells.ok() ? absl::StrCat(cells->size()) : "?", suite.question});
  }
  std::fputs(FormatTableText(table).c_str(), stdout);
  return kExitOk;
}

std::vector<Table> TablesOf(const v1::Workflow& workflow) {
  std::vector<Table> tables;
  for (const v1::OutputTable& t : workflow.output().tables()) tables.push_back(TableFromProto(t));
  return tables;
}

void PrintHeader(const v1::Workflow& workflow) {
  for (const std::string& line : workflow.output().header()) absl::PrintF("%s\n", line);
}

int RunSuite(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string profile = "ci";
  bool dry_run = false;
  FlagParser flags;
  flags.String("profile", &profile, "ci (minutes on 2 cores) or paper (the paper's sizes)");
  flags.Bool("dry-run", &dry_run, "print the cells and why any would be skipped; run nothing");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Report(s);
  if (flags.rest().size() != 1) {
    return Report(absl::InvalidArgumentError("usage: suite run NAME [--profile ci|paper]"));
  }
  // The built-in suites are known here too: a typo is refused before any
  // coordinator is asked (the coordinator checks it again).
  absl::StatusOr<Suite> suite = FindSuite(flags.rest()[0]);
  if (!suite.ok()) return Report(suite.status());
  if (absl::StatusOr<std::vector<SuiteCell>> cells = ExpandSuite(*suite, profile); !cells.ok()) {
    return Report(cells.status());
  }
  v1::WorkflowSpec spec;
  spec.mutable_suite()->set_suite(flags.rest()[0]);
  spec.mutable_suite()->set_profile(profile);
  if (dry_run) {
    // The coordinator plans it against its workers and stores nothing.
    v1::CreateWorkflowRequest create;
    *create.mutable_spec() = spec;
    create.set_validate_only(true);
    v1::Workflow planned;
    if (absl::Status s = client.Call(&v1::Coordinator::Stub::CreateWorkflow, create, &planned);
        !s.ok()) {
      return Report(s);
    }
    PrintHeader(planned);
    for (const v1::WorkflowCell& cell : planned.cells()) {
      absl::PrintF("%s  %s%s\n", cell.label(), cell.spec().operation(),
                   cell.skipped().empty() ? "" : "  # skipped: " + cell.skipped());
    }
    return kExitOk;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
  if (!done.ok()) return Report(done.status());
  PrintHeader(*done);
  PrintTables(TablesOf(*done));
  int ran = 0, failed = 0, skipped = 0;
  for (const v1::WorkflowCell& cell : done->cells()) {
    if (!cell.skipped().empty()) {
      ++skipped;
      continue;
    }
    if (cell.run().empty()) continue;
    ++ran;
    failed += cell.state() == v1::SUCCEEDED ? 0 : 1;
  }
  absl::PrintF("# %d runs (%d failed), %d skipped, %.0f s; %s\n", ran, failed, skipped,
               absl::ToDoubleSeconds(absl::Now() - start),
               client.follow_up().Line("again", {"suite", "show", WorkflowId(done->name())}));
  return done->state() == v1::WORKFLOW_SUCCEEDED ? kExitOk : kExitFailed;
}

int ShowSuite(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.size() != 1) return Report(absl::InvalidArgumentError("usage: suite show ID"));
  absl::StatusOr<v1::Workflow> workflow = GetWorkflow(client, args[0]);
  if (!workflow.ok()) return Report(workflow.status());
  if (!workflow->spec().has_suite()) {
    return Report(absl::InvalidArgumentError(absl::StrCat(
        workflow->name(), " is a ", workflow->kind(), ", not a suite run (collbench workflows "
        "show ", args[0], ")")));
  }
  PrintHeader(*workflow);
  absl::PrintF("# %s, %d of %d runs ended\n",
               absl::AsciiStrToLower(WorkflowStateName(workflow->state())),
               workflow->cells_done(), workflow->cells_total());
  PrintTables(TablesOf(*workflow));
  return kExitOk;
}

}  // namespace

int SuiteCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (args.empty() || AsksForHelp(args)) {  // `suite show --help` too
    std::fputs(kSuiteUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "list") return List();
  if (args[0] == "run") return RunSuite(client, rest);
  if (args[0] == "show") return ShowSuite(client, rest);
  return Report(absl::InvalidArgumentError(
      absl::StrCat("suite: unknown subcommand '", args[0], "' (list, run, show)")));
}

}  // namespace collbench

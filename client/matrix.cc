// SPDX-License-Identifier: Apache-2.0
#include "client/matrix.h"

#include <cstdio>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "analysis/table.h"
#include "client/format.h"
#include "client/run_flags.h"
#include "client/workflow_client.h"

namespace collbench {
namespace {

constexpr char kMatrixUsage[] =
    R"(usage: collbench matrix [--operations L] [--placements L] [--transports L] [--mpis L] [run flags]
One run per combination of the lists (defaults: allreduce,bcast,gather; pack,spread;
shm,tcp; openmpi), each with the same run flags (see collbench run --help), then
each operation side by side and the fastest and slowest configuration per size,
and the command that reports on the runs (under local, only with --store).
The coordinator runs the matrix as one workflow (collbench workflows) and checks
every combination before any runs: a list value that fits no combination (a
misspelled operation) refuses the whole matrix; a combination that cannot be
(Open MPI's shm across workers) is skipped with its reason.
)";

// The coordinator's field path for a list, as the flag that set it.
absl::Status AsFlags(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrReplaceAll(status.message(), {{"spec.matrix.operations", "--operations"},
                                                             {"spec.matrix.placements", "--placements"},
                                                             {"spec.matrix.transports", "--transports"},
                                                             {"spec.matrix.mpis", "--mpis"}}));
}

}  // namespace

absl::StatusOr<v1::MatrixSpec> ParseMatrixFlags(const std::vector<std::string>& args) {
  v1::MatrixSpec spec;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    google::protobuf::RepeatedPtrField<std::string>* list = nullptr;
    if (arg == "--operations") list = spec.mutable_operations();
    else if (arg == "--placements") list = spec.mutable_placements();
    else if (arg == "--transports") list = spec.mutable_transports();
    else if (arg == "--mpis") list = spec.mutable_mpis();
    if (list == nullptr) {
      rest.push_back(arg);
      continue;
    }
    if (i + 1 >= args.size()) return absl::InvalidArgumentError(arg + " needs a value");
    for (absl::string_view item : absl::StrSplit(args[++i], ',', absl::SkipEmpty())) {
      list->Add(std::string(item));
    }
  }
  // The run flags parse as they would for `run` (the operation is the
  // lists'; a placeholder stands for it here).
  rest.insert(rest.begin(), spec.operations().empty() ? "allreduce" : spec.operations(0));
  absl::StatusOr<RunRequest> base = ParseRunFlags(rest);
  if (!base.ok()) return base.status();
  *spec.mutable_base() = base->spec;
  spec.mutable_base()->clear_operation();
  return spec;
}

int MatrixCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (AsksForHelp(args)) {
    std::fputs(kMatrixUsage, stdout);
    return kExitOk;
  }
  absl::StatusOr<v1::MatrixSpec> matrix = ParseMatrixFlags(args);
  if (!matrix.ok()) return Report(matrix.status());
  v1::WorkflowSpec spec;
  *spec.mutable_matrix() = *matrix;
  absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
  if (!done.ok()) return Report(AsFlags(done.status()));
  absl::StatusOr<std::vector<RunWithResults>> runs = FetchWorkflowRuns(client, *done);
  if (!runs.ok()) return Report(runs.status());
  // Each operation's runs side by side, in the lists' order.
  std::vector<std::string> operations;
  std::map<std::string, std::vector<RunWithResults>> by_operation;
  for (const v1::WorkflowCell& cell : done->cells()) {
    const std::string op = cell.spec().operation();
    if (!by_operation.count(op)) operations.push_back(op);
    by_operation[op];
  }
  for (const RunWithResults& run : *runs) by_operation[run.run.spec().operation()].push_back(run);
  for (const std::string& op : operations) {
    const std::vector<RunWithResults>& of_op = by_operation[op];
    absl::PrintF("\n== %s\n%s", op,
                 of_op.empty() ? "no run: every combination was skipped (above)\n"
                               : FormatComparison(of_op, OutputKind::kTable));
  }
  for (const v1::OutputTable& table : done->output().tables()) {
    absl::PrintF("\n%s", FormatTableText(TableFromProto(table)));
  }
  if (!runs->empty()) {
    std::vector<std::string> report = {"report"};
    for (const RunWithResults& run : *runs) report.push_back(run.run.name());
    report.insert(report.end(), {"-o", "matrix.html"});
    absl::PrintF("\n# %d runs (%s); %s\n", runs->size(), done->name(),
                 client.follow_up().Line("report", report));
  }
  return done->state() == v1::WORKFLOW_SUCCEEDED ? kExitOk : kExitFailed;
}

}  // namespace collbench

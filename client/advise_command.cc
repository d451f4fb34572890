// SPDX-License-Identifier: Apache-2.0
#include "client/advise_command.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/advisor.h"
#include "analysis/algorithms.h"
#include "client/format.h"
#include "client/run_flags.h"
#include "client/workflow_client.h"
#include "common/atomic_file.h"
#include "common/flag_parser.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

constexpr char kAdviseUsage[] = R"(usage: collbench advise RUN... | --suite ID | --sweep ID [--write-rules DIR]
Per operation and message-size range, the fastest configuration among the
runs, its margin over the runner-up and whether the margin is significant
(the two means' 95% intervals, from the stored histograms, do not overlap).
Runs are compared within one operation and rank count.
  --suite ID         the runs of a suite run (collbench suite run …)
  --sweep ID         the runs of an algorithm sweep (collbench sweep …)
  --write-rules DIR  also write the tuning files: openmpi-rules.conf (Open MPI
                     coll_tuned dynamic rules), mpich.env (algorithm CVARs),
                     nccl.env (NCCL_ALGO/NCCL_PROTO), where the runs allow;
                     rules only from significant wins and only on the rank
                     counts and sizes measured (env settings, which hold at
                     every size, commented out); nothing when no win is
                     significant
)";

constexpr char kSweepUsage[] = R"(usage: collbench sweep OPERATION [--algorithms A,B,...] [--write-rules DIR] [run flags]
One run per collective algorithm the library offers for OPERATION (Open MPI's
coll_tuned_<op>_algorithm values, MPICH's MPIR_CVAR_<OP>_INTRA_ALGORITHM),
plus one with the library's own choice, all with the same run flags; then
the advice over them (see collbench advise). --mpi picks the library.
  --algorithms L     only these algorithms (an unknown name lists the library's)
  --write-rules DIR  write the tuning files (see collbench advise --help)
)";

void PrintTables(const v1::Workflow& workflow) {
  for (const v1::OutputTable& t : workflow.output().tables()) {
    absl::PrintF("\n%s", FormatTableText(TableFromProto(t)));
  }
}

// A run that loads the rules file from `dir`, runnable as printed: on
// local workers given `dir` as their --tuning-dir, with the operation, rank
// count and library of `measured` (a run the advice was drawn from).
std::string LoadRulesCommand(const v1::RunSpec& measured, const std::string& dir,
                             const FollowUp& follow_up) {
  const std::string mpi = MpiName(measured.mpi());
  std::vector<std::string> run = {"run", measured.operation(), "--ranks",
                                  absl::StrCat(measured.ranks()), "--mpi", mpi};
  if (const MpiFlavor* flavor = Flavors().Find(mpi); flavor != nullptr) {
    for (const auto& [key, value] : flavor->RulesFileEnv(kOpenMpiRulesFile)) {
      run.insert(run.end(), {"--env", absl::StrCat(key, "=", value)});
    }
  }
  return FollowUp(follow_up.program(), {"local", "--tuning-dir", dir}, /*kept=*/false)
      .Command(run);
}

// Writes the workflow's tuning files into `dir` (on this machine) and says
// how to load them; the coordinator's refusal when it wrote none.
int WriteRules(CoordinatorClient& client, const v1::Workflow& workflow,
               const v1::RunSpec& measured, const std::string& dir) {
  if (workflow.output().tuning_files().empty()) {
    return Report(absl::FailedPreconditionError(
        workflow.output().tuning_refusal().empty() ? "no tuning file to write"
                                                   : workflow.output().tuning_refusal()));
  }
  std::vector<TuningFileText> files;
  for (const v1::TuningFile& f : workflow.output().tuning_files()) {
    files.emplace_back(f.name(), f.content());
  }
  absl::StatusOr<std::vector<std::string>> written = WriteTuningFileTexts(files, dir);
  if (!written.ok()) return Report(written.status());
  for (const std::string& path : *written) {
    absl::PrintF("wrote %s\n", path);
    if (absl::EndsWith(path, absl::StrCat("/", kOpenMpiRulesFile))) {
      // Runs name a tuning file by its bare name in the workers' --tuning-dir.
      absl::PrintF(
          "  load it: %s\n  (deployed workers: install it in their --tuning-dir and run with"
          " the same --env)\n",
          LoadRulesCommand(measured, dir, client.follow_up()));
    }
  }
  return kExitOk;
}

// A run of the advice's (its first), for the load-it line.
v1::RunSpec MeasuredSpec(CoordinatorClient& client, const v1::Workflow& workflow,
                         const std::vector<std::string>& runs) {
  for (const v1::WorkflowCell& cell : workflow.cells()) {
    if (!cell.run().empty()) return cell.spec();
  }
  if (!runs.empty()) {
    absl::StatusOr<RunWithResults> run = Fetch(client, runs[0]);
    if (run.ok()) return run->run.spec();
  }
  return v1::RunSpec();
}

}  // namespace

int AdviseCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string suite, sweep, rules_dir;
  FlagParser flags;
  flags.String("suite", &suite, "the runs of this suite run");
  flags.String("sweep", &sweep, "the runs of this sweep");
  flags.String("write-rules", &rules_dir, "write tuning files into this folder");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Report(s);
  if (flags.help()) {
    std::fputs(kAdviseUsage, stdout);
    return kExitOk;
  }
  const int sources = (suite.empty() ? 0 : 1) + (sweep.empty() ? 0 : 1) +
                      (flags.rest().empty() ? 0 : 1);
  if (sources != 1) {
    return Report(absl::InvalidArgumentError(
        "advise: name runs, or one of --suite ID and --sweep ID (see collbench advise --help)"));
  }
  if (!rules_dir.empty()) {
    // Before anything is asked: a folder that cannot be made is a typo.
    if (absl::Status folder = CheckParentFolder(std::string(absl::StripSuffix(rules_dir, "/"))); !folder.ok()) {
      return Report(absl::InvalidArgumentError(absl::StrCat("--write-rules ", folder.message())));
    }
  }
  v1::WorkflowSpec spec;
  v1::RunSelection* selection = spec.mutable_advice();
  for (const std::string& run : flags.rest()) selection->add_runs(RunName(run));
  if (!suite.empty()) selection->set_workflow(WorkflowName(suite));
  if (!sweep.empty()) selection->set_workflow(WorkflowName(sweep));
  absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
  if (!done.ok()) return Report(done.status());
  PrintTables(*done);
  if (done->state() != v1::WORKFLOW_SUCCEEDED) {
    return Report(absl::FailedPreconditionError(absl::StrCat("advise: ", done->error())));
  }
  if (done->output().tuning_refusal() == kNothingToCompare) {
    return Report(absl::InvalidArgumentError(absl::StrCat("advise: ", done->output().tuning_refusal())));
  }
  if (rules_dir.empty()) return kExitOk;
  std::vector<std::string> measured_runs(selection->runs().begin(), selection->runs().end());
  if (!selection->workflow().empty()) {
    absl::StatusOr<v1::Workflow> of = GetWorkflow(client, selection->workflow());
    if (of.ok()) return WriteRules(client, *done, MeasuredSpec(client, *of, {}), rules_dir);
  }
  return WriteRules(client, *done, MeasuredSpec(client, *done, measured_runs), rules_dir);
}

int SweepCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string rules_dir, only;
  std::vector<std::string> run_args;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kSweepUsage, stdout);
      return kExitOk;
    }
    if ((a == "--write-rules" || a == "--algorithms") && i + 1 >= args.size()) {
      return Report(absl::InvalidArgumentError(absl::StrCat("sweep: ", a, " wants a value")));
    }
    if (a == "--write-rules") {
      rules_dir = args[++i];
    } else if (a == "--algorithms") {
      only = args[++i];
    } else {
      run_args.push_back(a);
    }
  }
  if (run_args.empty() || run_args[0].rfind("-", 0) == 0) {
    return Report(absl::InvalidArgumentError("usage: sweep OPERATION [flags] (see --help)"));
  }
  if (!rules_dir.empty()) {
    if (absl::Status folder = CheckParentFolder(std::string(absl::StripSuffix(rules_dir, "/"))); !folder.ok()) {
      return Report(absl::InvalidArgumentError(absl::StrCat("--write-rules ", folder.message())));
    }
  }
  absl::StatusOr<RunRequest> request = ParseRunFlags(run_args);
  if (!request.ok()) return Report(request.status());
  v1::WorkflowSpec spec;
  *spec.mutable_sweep()->mutable_base() = request->spec;
  for (absl::string_view name : absl::StrSplit(only, ',', absl::SkipEmpty())) {
    spec.mutable_sweep()->add_algorithms(std::string(name));
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::Workflow> done = RunWorkflow(client, spec);
  if (!done.ok()) {
    const std::string message(done.status().message());
    return Report(absl::Status(done.status().code(),
                               absl::StrCat("sweep: ", absl::StrReplaceAll(message, {{"spec.sweep.algorithms", "--algorithms"}, {"spec.sweep.base.", ""}, {"spec.sweep.base", "run flags"}}))));
  }
  PrintTables(*done);
  int failed = 0;
  for (const v1::WorkflowCell& cell : done->cells()) {
    failed += cell.state() == v1::SUCCEEDED ? 0 : 1;
  }
  absl::PrintF("# %d runs (%d failed), %.0f s; %s\n", done->cells_size(), failed,
               absl::ToDoubleSeconds(absl::Now() - start),
               client.follow_up().Line("again", {"advise", "--sweep", WorkflowId(done->name())}));
  int code = done->state() == v1::WORKFLOW_SUCCEEDED ? kExitOk : kExitFailed;
  if (!rules_dir.empty() && done->output().tuning_refusal() != kNothingToCompare) {
    const int wrote = WriteRules(client, *done, MeasuredSpec(client, *done, {}), rules_dir);
    if (wrote != kExitOk) code = wrote;
  }
  return code;
}

}  // namespace collbench

#include "client/advise_command.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/advisor.h"
#include "analysis/algorithms.h"
#include "client/format.h"
#include "client/run_flags.h"
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

void PrintAdvice(const Advice& advice) {
  for (const Table& t : AdviceTables(advice)) absl::PrintF("\n%s", FormatTableText(t));
}

// A run that loads the rules file from `dir`, runnable as printed: on
// local workers given `dir` as their --tuning-dir, with the operation and
// rank count of the first group whose library reads rules files.
std::string LoadRulesCommand(const Advice& advice, const std::string& dir,
                             const FollowUp& follow_up) {
  auto reads_rules = [](const AdviceGroup& g) {
    const MpiFlavor* flavor = Flavors().Find(g.mpi);
    return flavor != nullptr && flavor->RulesFileCollectiveId(g.operation) >= 0;
  };
  auto group = std::find_if(advice.groups.begin(), advice.groups.end(), reads_rules);
  if (group == advice.groups.end()) group = advice.groups.begin();
  std::vector<std::string> run = {"run", group->operation, "--ranks", absl::StrCat(group->ranks),
                                  "--mpi", group->mpi};
  if (const MpiFlavor* flavor = Flavors().Find(group->mpi); flavor != nullptr) {
    for (const auto& [key, value] : flavor->RulesFileEnv(kOpenMpiRulesFile)) {
      run.insert(run.end(), {"--env", absl::StrCat(key, "=", value)});
    }
  }
  return FollowUp(follow_up.program(), {"local", "--tuning-dir", dir}, /*kept=*/false)
      .Command(run);
}

int WriteRules(const Advice& advice, const std::string& dir, const FollowUp& follow_up) {
  absl::StatusOr<std::vector<std::string>> written = WriteTuningFiles(advice, dir);
  if (!written.ok()) return Report(written.status());
  if (written->empty()) {
    absl::FPrintF(stderr,
                  "collbench: no tuning file to write: no group of runs differs in its "
                  "algorithm only\n");
    return kExitFailed;
  }
  for (const std::string& path : *written) {
    absl::PrintF("wrote %s\n", path);
    if (absl::EndsWith(path, absl::StrCat("/", kOpenMpiRulesFile))) {
      // Runs name a tuning file by its bare name in the workers' --tuning-dir.
      absl::PrintF(
          "  load it: %s\n  (deployed workers: install it in their --tuning-dir and run with"
          " the same --env)\n",
          LoadRulesCommand(advice, dir, follow_up));
    }
  }
  return kExitOk;
}

std::string NewSweepId(const std::string& operation) {
  return absl::StrCat("sweep-", operation, "-",
                      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::UTCTimeZone()));
}

// The environment that forces `algorithm` ("" for the library's choice).
std::map<std::string, std::string> AlgorithmEnv(const v1::RunSpec& spec,
                                                const std::string& algorithm) {
  if (algorithm.empty()) return {};
  return FlavorFor(spec.mpi()).AlgorithmEnv(spec.operation(), algorithm);
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
  std::vector<RunWithResults> runs;
  if (!flags.rest().empty()) {
    for (const std::string& name : flags.rest()) {
      absl::StatusOr<RunWithResults> run = Fetch(client, name);
      if (!run.ok()) return Report(run.status());
      runs.push_back(*std::move(run));
    }
  } else {
    absl::StatusOr<std::vector<RunWithResults>> labelled =
        suite.empty() ? FetchLabelled(client, "sweep", sweep)
                      : FetchLabelled(client, "suite-run", suite);
    if (!labelled.ok()) return Report(labelled.status());
    runs = *std::move(labelled);
  }
  const Advice advice = Advise(runs);
  if (advice.groups.empty()) {
    PrintAdvice(advice);
    return Report(absl::InvalidArgumentError(
        "advise: no two successful runs of one operation on one rank count to compare"));
  }
  PrintAdvice(advice);
  return rules_dir.empty() ? kExitOk : WriteRules(advice, rules_dir, client.follow_up());
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
  absl::StatusOr<RunRequest> request = ParseRunFlags(run_args);
  if (!request.ok()) return Report(request.status());
  const v1::RunSpec& base = request->spec;
  const std::string& op = base.operation();
  const std::string library = MpiName(base.mpi());
  if (!base.backend().empty() && base.backend() != "mpi") {
    return Report(absl::InvalidArgumentError(absl::StrCat(
        "sweep: algorithms are chosen for the mpi backend; --backend ", base.backend(),
        " has none to sweep")));
  }
  const std::vector<std::string>& offered = FlavorFor(base.mpi()).Algorithms(op);
  if (offered.empty()) {
    return Report(absl::InvalidArgumentError(
        absl::StrCat("sweep: ", library, " offers no algorithm choice for ", op)));
  }
  std::vector<std::string> algorithms = {""};  // the library's own choice first
  if (only.empty()) {
    algorithms.insert(algorithms.end(), offered.begin(), offered.end());
  } else {
    for (const std::string& name :
         std::vector<std::string>(absl::StrSplit(only, ',', absl::SkipEmpty()))) {
      if (std::find(offered.begin(), offered.end(), name) == offered.end()) {
        return Report(absl::InvalidArgumentError(
            absl::StrCat("sweep: --algorithms: ", library, " has no ", op, " algorithm '", name,
                         "' (it has ", absl::StrJoin(offered, ", "), ")")));
      }
      algorithms.push_back(name);
    }
  }
  for (const auto& [key, value] : base.env()) {
    if (IsAlgorithmVariable(key)) {
      return Report(absl::InvalidArgumentError(absl::StrCat(
          "sweep: --env ", key, " sets the algorithm the sweep varies; leave it out")));
    }
  }
  const std::string id = NewSweepId(op);
  absl::FPrintF(stderr, "sweep %s: %s %s, %d runs (the library's choice and %d algorithms)\n",
                id, library, op, algorithms.size(), algorithms.size() - 1);
  const absl::Time start = absl::Now();
  std::vector<RunWithResults> runs;
  int failed = 0;
  for (size_t i = 0; i < algorithms.size(); ++i) {
    const std::string shown = algorithms[i].empty() ? "default" : algorithms[i];
    v1::RunSpec spec = base;
    for (const auto& [key, value] : AlgorithmEnv(base, algorithms[i])) {
      (*spec.mutable_env())[key] = value;
    }
    (*spec.mutable_labels())["sweep"] = id;
    absl::FPrintF(stderr, "[%d/%d] %s %s ...", i + 1, algorithms.size(), op, shown);
    const absl::Time run_start = absl::Now();
    absl::StatusOr<RunWithResults> run = CreateAndFollow(client, spec);
    if (!run.ok()) {
      absl::FPrintF(stderr, "\n");
      return Report(run.status());
    }
    const bool ok = run->run.state() == v1::SUCCEEDED && run->run.wrong() == 0;
    failed += ok ? 0 : 1;
    absl::FPrintF(stderr, " %s %s, %.1f s%s\n", run->run.name(), RunStateName(run->run.state()),
                  absl::ToDoubleSeconds(absl::Now() - run_start),
                  run->run.error().empty() ? "" : ": " + run->run.error());
    runs.push_back(*std::move(run));
  }
  const Advice advice = Advise(runs);
  PrintAdvice(advice);
  absl::PrintF("# %d runs (%d failed), %.0f s; %s\n", runs.size(), failed,
               absl::ToDoubleSeconds(absl::Now() - start),
               client.follow_up().Line("again", {"advise", "--sweep", id}));
  int code = failed == 0 ? kExitOk : kExitFailed;
  if (!rules_dir.empty() && !advice.groups.empty()) {
    const int wrote = WriteRules(advice, rules_dir, client.follow_up());
    if (wrote != kExitOk) code = wrote;
  }
  return code;
}

}  // namespace collbench

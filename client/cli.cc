// SPDX-License-Identifier: Apache-2.0
#include "client/cli.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/convert.h"
#include "api/status_mapping.h"
#include "client/advise_command.h"
#include "client/container_format.h"
#include "client/coordinator_client.h"
#include "client/format.h"
#include "client/lifecycle_commands.h"
#include "client/local_flags.h"
#include "client/matrix.h"
#include "client/hunt_command.h"
#include "client/verdict_commands.h"
#include "client/workflow_client.h"
#include "client/report_command.h"
#include "client/run_flags.h"
#include "client/suite_command.h"
#include "client/terminal_text.h"
#include "collbench/v1/coordinator.grpc.pb.h"
#include "common/flag_parser.h"
#include "common/grpc_health.h"
#include "common/secrets.h"
#include "common/units.h"

namespace collbench {
namespace {

constexpr char kUsageHead[] =
    R"(usage: collbench [--coordinator HOST:PORT] [--token-file FILE | --token T]
                 [--tls-ca FILE [--tls-server-name NAME] [--tls-cert F --tls-key F]]
                 COMMAND
  The bearer token: --token-file FILE (its first line), or the COLLBENCH_TOKEN
  environment variable; --token T also works but shows the token to every
  local user (ps, /proc).
commands:
  workers [--long]              the registered workers (--long: container facts
                                and labels)
  drain WORKER... | undrain WORKER...
                                no new runs on a worker until undrained (kept
                                across restarts) | take runs again
  workers delete WORKER...      forget workers that are gone (lost)
  workers clear WORKER...       end a SUSPECT worker's quarantine (a hunt's)
  hunt [--pattern P] [--workers SELECTOR] [flags]
                                find the bad node: pairwise, groups of k, ring
                                or all; suspects re-tested with healthy peers;
                                exit 3 when one is found
  health [HOST:PORT] [--service S] [--timeout D]
                                the gRPC health status of the coordinator (or of
                                a worker's --listen address); exit 0 if SERVING
  runs [--state S] [--limit N]  runs, newest first
  show RUN [--output F]         a run and its results
  watch RUN                     follow a run as it goes on
  cancel RUN                    stop a run
  delete RUN...                 delete finished runs and their results
  compare RUN RUN... [--output F]  runs side by side with ratios
  run OPERATION [flags]         create a run (see `collbench run --help`)
  matrix [--operations L] [--placements L] [--transports L] [--mpis L] [run flags]
                                one run per combination, then fastest vs slowest
  suite list | run NAME [--profile ci|paper] | show ID
                                one of the five published papers collbench
                                reproduces (its seeds, docs/suites.md): its
                                runs, its tables and whether this run agrees
  report RUN... | --suite ID -o FILE.html
                                a self-contained HTML report: plots, ratios,
                                per-rank view, environment differences
  sweep OPERATION [--algorithms L] [--write-rules DIR] [run flags]
                                one run per algorithm the library offers, then
                                the advice over them
  advise RUN... | --suite ID | --sweep ID [--write-rules DIR]
                                the fastest configuration per size range, its
                                margin and significance; tuning files to deploy
  baseline save NAME (RUN... | --suite ID) | list | show NAME | delete NAME
                                keep runs' latency distributions per
                                configuration to check later runs against
  check (RUN... | --suite ID) --baseline NAME [--output json]
                                like with like against a baseline: ratio,
                                interval, verdict; exit 3 on a regression
  schedule create NAME --every D (--suite S | --hunt P | OPERATION [run flags]) [--baseline B]
           | list | show NAME | pause NAME | resume NAME | delete NAME
                                checks the coordinator fires every period when
                                the workers are idle, against a baseline
  workflows [list] | show ID | watch ID | cancel ID | delete ID
                                the coordinator's matrices, suite runs, sweeps,
                                advice and reports (the commands above make them)
  local [flags] COMMAND...      an embedded coordinator and K local workers on
                                127.0.0.1 for one command; nothing left running
    flags: )";

constexpr char kUsageTail[] =
    R"(
Every command's --help (or -h) gives its usage, with no coordinator needed.
)";

bool Succeeded(const v1::Run& run) { return run.state() == v1::SUCCEEDED; }

int Workers(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "delete") {
    return DeleteWorkersCommand(client, std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args[0] == "clear") {
    return ClearWorkersCommand(client, std::vector<std::string>(args.begin() + 1, args.end()));
  }
  bool long_format = false;
  FlagParser flags;
  flags.Bool("long", &long_format,
             "also each worker's container signals, namespaces, /dev/shm, cgroup limits and"
             " labels");
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args,
          "usage: collbench workers [--long] | workers clear WORKER... | workers delete "
          "WORKER...\nThe registered workers; a drained worker that is gone shows as "
          "lost/draining, a quarantined one as suspect, with the hunt that found it.\n")) {
    return *stop;
  }
  if (!flags.rest().empty()) {
    return Report(absl::InvalidArgumentError(
        absl::StrCat("workers: unexpected argument '", flags.rest()[0], "'")));
  }
  v1::ListWorkersRequest request;
  request.set_page_size(1000);
  v1::ListWorkersResponse response;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::ListWorkers, request, &response);
      !s.ok()) {
    return Report(s);
  }
  std::fputs(FormatWorkerList({response.workers().begin(), response.workers().end()}).c_str(),
             stdout);
  if (long_format) {
    for (const v1::Worker& w : response.workers()) {
      std::fputs(("\n" + FormatWorkerDetail(w)).c_str(), stdout);
    }
  }
  return kExitOk;
}

int Runs(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string state;
  int limit = 50;
  FlagParser flags;
  flags.String("state", &state, "only runs in this state");
  flags.Int("limit", &limit, "at most this many runs");
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args, "usage: collbench runs [--state S] [--limit N]\nRuns, newest first.\n")) {
    return *stop;
  }
  v1::ListRunsRequest request;
  request.set_page_size(limit);
  if (!state.empty()) request.set_filter("state=" + absl::AsciiStrToUpper(state));
  v1::ListRunsResponse response;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::ListRuns, request, &response);
      !s.ok()) {
    return Report(s);
  }
  std::fputs(FormatRunList({response.runs().begin(), response.runs().end()}).c_str(), stdout);
  return kExitOk;
}

int Show(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string output = "table";
  FlagParser flags;
  flags.String("output", &output, "table, jsonl or csv");
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args,
          "usage: collbench show RUN [--output table|jsonl|csv]\nA run and its results.\n")) {
    return *stop;
  }
  if (flags.rest().size() != 1) return Report(absl::InvalidArgumentError("usage: show RUN"));
  absl::StatusOr<OutputKind> kind = ParseOutputKind(output);
  if (!kind.ok()) return Report(kind.status());
  absl::StatusOr<RunWithResults> run = Fetch(client, flags.rest()[0]);
  if (!run.ok()) return Report(run.status());
  std::fputs(FormatRunResults(run->run, run->results, *kind).c_str(), stdout);
  return kExitOk;
}

// Follows a run; with `print_rows`, prints each size as it comes. Progress
// goes to stderr: on a terminal as one line redrawn in place, erased before
// a result row or state line is printed, so the two never share a line; to a
// file or pipe as one line per update.
absl::StatusOr<v1::Run> Follow(CoordinatorClient& client, const std::string& run, bool print_rows) {
  const bool terminal = isatty(STDERR_FILENO) == 1;
  bool header = false;
  bool progress_shown = false;  // a progress line is drawn on the terminal
  auto erase_progress = [&] {
    if (progress_shown) WriteTerminalControl(stderr, "\r\033[K");
    progress_shown = false;
  };
  return client.Watch(run, [&](const v1::RunEvent& event) {
    if (event.has_result() && print_rows) {
      erase_progress();
      if (!header) std::fputs(ResultHeader().c_str(), stdout);
      header = true;
      std::fputs(FormatResultRow(event.result()).c_str(), stdout);
      std::fflush(stdout);
    } else if (event.has_progress()) {
      erase_progress();
      // Where each rank is (relayed by the workers), on one line: the
      // slowest rank's place and who else is there.
      std::string ranks;
      if (event.progress().ranks_size() > 0) {
        const v1::RankProgress* slowest = &event.progress().ranks(0);
        for (const v1::RankProgress& r : event.progress().ranks()) {
          if (std::make_tuple(r.size_index(), r.iteration()) <
              std::make_tuple(slowest->size_index(), slowest->iteration())) {
            slowest = &r;
          }
        }
        ranks = absl::StrFormat("  ranks: slowest %d on %s in %s", slowest->rank(),
                                slowest->host(), RankPlace(*slowest));
      }
      if (terminal) WriteTerminalControl(stderr, "\r");
      absl::FPrintF(stderr, "  [%d/%d sizes]%s%s", event.progress().sizes_done(),
                    event.progress().sizes_total(), ranks, terminal ? "" : "\n");
      progress_shown = terminal;
    } else if (event.has_state_change()) {
      erase_progress();
      absl::FPrintF(stderr, "%s: %s%s\n", event.state_change().name(),
                    RunStateName(event.state_change().state()),
                    event.state_change().error().empty() ? ""
                                                         : " (" + event.state_change().error() + ")");
    }
  });
}

int Watch(CoordinatorClient& client, const std::vector<std::string>& args) {
  FlagParser flags;
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args,
          "usage: collbench watch RUN\nFollows a run, each size as it is measured; exit 0 if it"
          " succeeds.\nCtrl-C stops watching, not the run.\n")) {
    return *stop;
  }
  if (flags.rest().size() != 1) return Report(absl::InvalidArgumentError("usage: watch RUN"));
  absl::StatusOr<v1::Run> run = Follow(client, RunName(flags.rest()[0]), true);
  if (!run.ok()) return Report(run.status());
  return Succeeded(*run) ? kExitOk : kExitFailed;
}

int Cancel(CoordinatorClient& client, const std::vector<std::string>& args) {
  FlagParser flags;
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args,
          "usage: collbench cancel RUN\nStops a run: a queued one at once, a running one's"
          " processes on every worker.\n")) {
    return *stop;
  }
  if (flags.rest().size() != 1) return Report(absl::InvalidArgumentError("usage: cancel RUN"));
  v1::CancelRunRequest request;
  request.set_name(RunName(flags.rest()[0]));
  v1::Run run;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::CancelRun, request, &run); !s.ok()) {
    return Report(s);
  }
  absl::PrintF("%s: %s\n", run.name(), RunStateName(run.state()));
  return kExitOk;
}

int Compare(CoordinatorClient& client, const std::vector<std::string>& args) {
  std::string output = "table";
  FlagParser flags;
  flags.String("output", &output, "table or csv");
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args,
          "usage: collbench compare RUN RUN... [--output table|csv]\nRuns side by side, with"
          " ratios to the first.\n")) {
    return *stop;
  }
  if (flags.rest().size() < 2) {
    return Report(absl::InvalidArgumentError("usage: compare RUN RUN..."));
  }
  absl::StatusOr<OutputKind> kind = ParseOutputKind(output);
  if (!kind.ok()) return Report(kind.status());
  std::vector<RunWithResults> runs;
  for (const std::string& name : flags.rest()) {
    absl::StatusOr<RunWithResults> run = Fetch(client, name);
    if (!run.ok()) return Report(run.status());
    runs.push_back(*std::move(run));
  }
  // The table carries the warning itself; CSV readers get it on stderr.
  const std::string warning = SyncMismatchWarning(runs);
  if (!warning.empty() && *kind != OutputKind::kTable) {
    absl::FPrintF(stderr, "collbench: %s\n", warning);
  }
  std::fputs(FormatComparison(runs, *kind).c_str(), stdout);
  return kExitOk;
}

int Run(CoordinatorClient& client, const std::vector<std::string>& args) {
  if (AsksForHelp(args)) {
    std::fputs(RunUsage().c_str(), stdout);
    return kExitOk;
  }
  absl::StatusOr<RunRequest> request = ParseRunFlags(args);
  if (!request.ok()) return Report(request.status());
  v1::CreateRunRequest create;
  *create.mutable_spec() = request->spec;
  create.set_request_id(request->request_id);
  v1::Run run;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::CreateRun, create, &run); !s.ok()) {
    return Report(s);
  }
  if (!request->wait && !request->watch) {
    absl::PrintF("%s: %s\n", run.name(), RunStateText(run));
    return kExitOk;
  }
  absl::StatusOr<v1::Run> ended =
      Follow(client, run.name(), request->watch && request->output == OutputKind::kTable);
  if (!ended.ok()) return Report(ended.status());
  if (request->wait || request->output != OutputKind::kTable) {
    absl::StatusOr<RunWithResults> full = Fetch(client, run.name());
    if (!full.ok()) return Report(full.status());
    std::fputs(FormatRunResults(full->run, full->results, request->output).c_str(), stdout);
  }
  return Succeeded(*ended) ? kExitOk : kExitFailed;
}

// `collbench health`: asks the standard gRPC health service, as
// Kubernetes' grpc probe does. A worker is SERVING only while registered.
int Health(const std::string& coordinator, const ChannelSetup& channel,
           const std::vector<std::string>& args) {
  std::string service;
  double timeout_s = 5;
  FlagParser flags;
  flags.String("service", &service, "the service to ask about (default: the server as a whole)");
  flags.Custom("timeout", "DURATION",
               [&](absl::string_view text) -> absl::Status {
                 absl::StatusOr<double> seconds = ParseDurationSeconds(text);
                 if (!seconds.ok()) {
                   return absl::InvalidArgumentError(
                       absl::StrCat("--timeout: ", seconds.status().message()));
                 }
                 if (*seconds <= 0) {
                   return absl::InvalidArgumentError(
                       absl::StrCat("--timeout: '", text, "' must be positive"));
                 }
                 timeout_s = *seconds;
                 return absl::OkStatus();
               },
               "how long to wait for the answer (default 5s)");
  if (std::optional<int> stop = ParseCommandFlags(
          flags, args,
          "usage: collbench health [HOST:PORT] [flags]\nThe gRPC health status of the"
          " coordinator, or of a worker's --listen address; exit 0 if SERVING.\n")) {
    return *stop;
  }
  if (flags.rest().size() > 1) {
    return Report(absl::InvalidArgumentError(
        absl::StrCat("health: unexpected argument '", flags.rest()[1], "'")));
  }
  const std::string address = flags.rest().empty() ? coordinator : flags.rest()[0];
  absl::StatusOr<std::string> status =
      CheckGrpcHealth(CreateCoordinatorChannel(address, channel), service,
                      absl::Seconds(timeout_s));
  if (!status.ok()) {
    absl::FPrintF(stderr, "collbench: %s: %s\n", address, status.status().message());
    return kExitFailed;
  }
  absl::PrintF("%s\n", *status);
  return *status == "SERVING" ? kExitOk : kExitFailed;
}

}  // namespace

std::string CliUsage() {
  FlagParser local;
  LocalOptions unused;
  AddLocalFlags(&local, &unused);
  return absl::StrCat(kUsageHead, local.Synopsis(), "\n", kUsageTail);
}

int RunCommand(const std::string& coordinator, const std::string& token,
               const std::vector<std::string>& command, const FollowUp& follow_up,
               const ClientTlsOptions& tls) {
  if (command.empty()) {
    std::fputs(CliUsage().c_str(), stderr);
    return kExitUsage;
  }
  const std::string& name = command[0];
  const std::vector<std::string> args(command.begin() + 1, command.end());
  // A command's help calls nobody: it needs no certificate files either.
  absl::StatusOr<ChannelSetup> channel =
      MakeChannelSetup(AsksForHelp(args) ? ClientTlsOptions{} : tls);
  if (!channel.ok()) return Report(channel.status());
  if (name == "health") return Health(coordinator, *channel, args);
  CoordinatorClient client(coordinator, token, *channel, follow_up);
  if (name == "workers") return Workers(client, args);
  if (name == "runs") return Runs(client, args);
  if (name == "show") return Show(client, args);
  if (name == "watch") return Watch(client, args);
  if (name == "cancel") return Cancel(client, args);
  if (name == "delete") return DeleteRunsCommand(client, args);
  if (name == "drain" || name == "undrain") return DrainCommand(client, args, name == "drain");
  if (name == "compare") return Compare(client, args);
  if (name == "run") return Run(client, args);
  if (name == "matrix") return MatrixCommand(client, args);
  if (name == "workflows") return WorkflowsCommand(client, args);
  if (name == "suite") return SuiteCommand(client, args);
  if (name == "report") return ReportCommand(client, args);
  if (name == "advise") return AdviseCommand(client, args);
  if (name == "sweep") return SweepCommand(client, args);
  if (name == "baseline") return BaselineCommand(client, args);
  if (name == "check") return CheckCommand(client, args);
  if (name == "hunt") return HuntCommand(client, args);
  if (name == "schedule") return ScheduleCommand(client, args);
  absl::FPrintF(stderr, "collbench: unknown command '%s'\n%s", name, CliUsage());
  return kExitUsage;
}

namespace {

// The bearer token: --token, else --token-file's first line, else the
// COLLBENCH_TOKEN environment variable. The variable is removed either way,
// so nothing this process starts (`local`'s workers) inherits it.
absl::StatusOr<std::string> BearerToken(const std::string& flag_token,
                                        const std::string& token_file) {
  std::string from_env = TakeSecretFromEnv("COLLBENCH_TOKEN");
  if (!flag_token.empty() && !token_file.empty()) {
    return absl::InvalidArgumentError("--token and --token-file: give one of them");
  }
  if (!flag_token.empty()) return flag_token;
  if (!token_file.empty()) {
    if (absl::Status shared = CheckPrivateFile(token_file); !shared.ok()) {
      absl::FPrintF(stderr, "collbench: warning: --token-file %s\n", shared.message());
    }
    return ReadTokenFile("token-file", token_file);
  }
  return from_env;
}

// The words after the program that reach the same coordinator as this
// command did, for follow-up commands. A --token is left out: it is a
// secret, and the COLLBENCH_TOKEN or --token-file a person should use
// instead are theirs to give.
std::vector<std::string> ReachWords(const std::string& coordinator, const std::string& token_file,
                                    const ClientTlsOptions& tls) {
  std::vector<std::string> words = {"--coordinator", coordinator};
  const std::pair<const char*, const std::string*> given[] = {
      {"--token-file", &token_file},
      {"--tls-ca", &tls.ca_file},
      {"--tls-server-name", &tls.server_name},
      {"--tls-cert", &tls.cert_file},
      {"--tls-key", &tls.key_file}};
  for (const auto& [flag, value] : given) {
    if (!value->empty()) words.insert(words.end(), {flag, *value});
  }
  return words;
}

}  // namespace

int RunCli(int argc, char** argv, const LocalCommand& local) {
  std::string coordinator = "127.0.0.1:50051", token, token_file;
  FlagParser flags;
  flags.String("coordinator", &coordinator, "coordinator gRPC address HOST:PORT");
  flags.String("token-file", &token_file,
               "a file whose first line is the bearer token (also COLLBENCH_TOKEN)");
  flags.String("token", &token,
               "bearer token (visible to local users in the process list: prefer --token-file)");
  ClientTlsOptions tls;
  flags.String("tls-ca", &tls.ca_file, "PEM CA certificate(s): dial the coordinator over TLS");
  flags.String("tls-server-name", &tls.server_name,
               "the name the coordinator's certificate must carry, when it is not the host"
               " in --coordinator");
  flags.String("tls-cert", &tls.cert_file,
               "PEM client certificate chain to present (with --tls-key and --tls-ca), for a "
               "coordinator that requires one (--tls-client-ca)");
  flags.String("tls-key", &tls.key_file, "PEM private key for --tls-cert");
  const absl::Status parsed =
      flags.Parse(std::vector<std::string>(argv + 1, argv + argc), /*stop_at_positional=*/true);
  if (flags.help() && flags.rest().empty()) {
    std::fputs(CliUsage().c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return Report(parsed);
  std::vector<std::string> command = flags.rest();
  if (flags.help()) command.push_back("--help");  // `collbench --help runs`: the command's help
  absl::StatusOr<std::string> bearer = BearerToken(token, token_file);
  if (!bearer.ok()) return Report(bearer.status());
  if (!command.empty() && command[0] == "local") {
    return local(argv[0], std::vector<std::string>(command.begin() + 1, command.end()));
  }
  const FollowUp follow_up(argv[0], ReachWords(coordinator, token_file, tls), /*kept=*/true);
  return RunCommand(coordinator, *bearer, command, follow_up, tls);
}

}  // namespace collbench

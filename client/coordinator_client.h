// SPDX-License-Identifier: Apache-2.0
// The CLI's connection to a coordinator: unary calls and run watches with
// the bearer token attached, and the few fetches several commands share
// (a run with its results; every run carrying a label).
#ifndef COLLBENCH_CLIENT_COORDINATOR_CLIENT_H_
#define COLLBENCH_CLIENT_COORDINATOR_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/run_set.h"
#include "api/status_mapping.h"
#include "client/follow_up.h"
#include "collbench/v1/coordinator.grpc.pb.h"
#include "common/flag_parser.h"
#include "common/tls_channel.h"

namespace collbench {

// Exit codes (docs/design/command-lines.md#exit-codes): 0 success, 1 the run
// failed, 2 bad usage or input.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// Prints a failed status as one line on stderr and maps it to an exit
// code: bad input and unknown names are usage errors, the rest failures.
int Report(const absl::Status& status);

// "runs/ID" from "ID" or "runs/ID".
std::string RunName(absl::string_view text);

// Whether `--help` or `-h` is among a command's arguments.
bool AsksForHelp(const std::vector<std::string>& args);

// Parses a command's flags. On --help or -h, prints `usage` and the flags'
// help to stdout, so every command's help works with no coordinator.
// Returns the exit code to stop with (kExitOk after the help, kExitUsage
// for a bad flag), or nullopt to go on.
std::optional<int> ParseCommandFlags(FlagParser& flags, const std::vector<std::string>& args,
                                     absl::string_view usage);

// The calls connect on first use: constructing one reaches nobody. A
// coordinator that cannot be reached comes back as Unavailable naming the
// address and how to start one or use `collbench local`.
class CoordinatorClient {
 public:
  CoordinatorClient(const std::string& address, const std::string& token,
                    const ChannelSetup& channel, FollowUp follow_up);

  template <typename Request, typename Response, typename Method>
  absl::Status Call(Method method, const Request& request, Response* response) {
    grpc::ClientContext context;
    Prepare(&context);
    return Explain(FromGrpcStatus(((*stub_).*method)(&context, request, response)));
  }

  // Streams the run's events to `on_event` until the run ends; returns the
  // run as it ended. Ctrl-C meanwhile ends the command, saying that the
  // run goes on and how to watch or cancel it (interrupt_notice.h).
  absl::StatusOr<v1::Run> Watch(const std::string& run,
                                const std::function<void(const v1::RunEvent&)>& on_event);

  // Streams the workflow's versions to `on_version` until it ends; returns
  // it as it ended. Ctrl-C meanwhile ends the command, saying that the
  // workflow goes on and how to watch or cancel it.
  absl::StatusOr<v1::Workflow> FollowWorkflow(
      const std::string& workflow, const std::function<void(const v1::Workflow&)>& on_version);

  // How a person reaches this coordinator again from a shell.
  const FollowUp& follow_up() const { return follow_up_; }

 private:
  void Prepare(grpc::ClientContext* context);
  absl::Status Explain(absl::Status status) const;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  std::string address_;
  std::string token_;
  FollowUp follow_up_;
};

// A run and its results.
absl::StatusOr<RunWithResults> Fetch(CoordinatorClient& client, const std::string& run);

// Creates a run, follows it to its end (`on_event` sees its events) and
// returns it with its results. A spec the coordinator refuses comes back
// as its status (InvalidArgument for a combination that cannot be).
absl::StatusOr<RunWithResults> CreateAndFollow(
    CoordinatorClient& client, const v1::RunSpec& spec,
    const std::function<void(const v1::RunEvent&)>& on_event = [](const v1::RunEvent&) {});

// Every stored run whose spec carries the label key=value, with its
// results, oldest first. NotFound naming the label when there is none.
absl::StatusOr<std::vector<RunWithResults>> FetchLabelled(CoordinatorClient& client,
                                                          const std::string& key,
                                                          const std::string& value);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_COORDINATOR_CLIENT_H_

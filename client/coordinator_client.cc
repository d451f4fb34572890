// SPDX-License-Identifier: Apache-2.0
#include "client/coordinator_client.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "client/interrupt_notice.h"

namespace collbench {

int Report(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  absl::FPrintF(stderr, "collbench: %s\n", status.message());
  return status.code() == absl::StatusCode::kInvalidArgument ||
                 status.code() == absl::StatusCode::kNotFound
             ? kExitUsage
             : kExitFailed;
}

std::string RunName(absl::string_view text) {
  return absl::StartsWith(text, "runs/") ? std::string(text) : absl::StrCat("runs/", text);
}

bool AsksForHelp(const std::vector<std::string>& args) {
  return std::find_if(args.begin(), args.end(), [](const std::string& arg) {
           return arg == "--help" || arg == "-h";
         }) != args.end();
}

std::optional<int> ParseCommandFlags(FlagParser& flags, const std::vector<std::string>& args,
                                     absl::string_view usage) {
  if (absl::Status s = flags.Parse(args); !s.ok()) return Report(s);
  if (!flags.help()) return std::nullopt;
  absl::PrintF("%s%s", usage, flags.Usage());
  return kExitOk;
}

CoordinatorClient::CoordinatorClient(const std::string& address, const std::string& token,
                                     const ChannelSetup& channel, FollowUp follow_up)
    : stub_(v1::Coordinator::NewStub(CreateCoordinatorChannel(address, channel))),
      address_(address),
      token_(token),
      follow_up_(std::move(follow_up)) {}

absl::Status CoordinatorClient::Explain(absl::Status status) const {
  if (!absl::IsUnavailable(status)) return status;
  return absl::UnavailableError(absl::StrCat(
      "no coordinator answers at ", address_, " (", status.message(), ")\n  start one there: ",
      "collbench-coordinator --grpc-listen ", address_,
      " --store collbench.db --tokens TOKENS-FILE (docs/operations/deploy.md), or name another"
      " with --coordinator HOST:PORT\n  or, with nothing deployed, on this machine: collbench"
      " local COMMAND"));
}

absl::StatusOr<v1::Run> CoordinatorClient::Watch(
    const std::string& run, const std::function<void(const v1::RunEvent&)>& on_event) {
  const ScopedInterruptNotice notice(absl::StrCat(
      "\ncollbench: interrupted; ", run, " goes on at the coordinator\n  watch it again: ",
      follow_up_.Command({"watch", run}), "\n  cancel it:      ",
      follow_up_.Command({"cancel", run}), "\n"));
  grpc::ClientContext context;
  Prepare(&context);
  v1::WatchRunRequest request;
  request.set_name(run);
  auto reader = stub_->WatchRun(&context, request);
  v1::RunEvent event;
  while (reader->Read(&event)) on_event(event);
  absl::Status status = Explain(FromGrpcStatus(reader->Finish()));
  if (!status.ok()) return status;
  v1::GetRunRequest get;
  get.set_name(run);
  v1::Run ended;
  absl::Status got = Call(&v1::Coordinator::Stub::GetRun, get, &ended);
  if (!got.ok()) return got;
  return ended;
}

absl::StatusOr<v1::Workflow> CoordinatorClient::FollowWorkflow(
    const std::string& workflow, const std::function<void(const v1::Workflow&)>& on_version) {
  absl::string_view id = workflow;
  absl::ConsumePrefix(&id, "workflows/");
  const ScopedInterruptNotice notice(absl::StrCat(
      "\ncollbench: interrupted; ", workflow, " goes on at the coordinator\n  watch it again: ",
      follow_up_.Command({"workflows", "watch", std::string(id)}), "\n  cancel it:      ",
      follow_up_.Command({"workflows", "cancel", std::string(id)}), "\n"));
  grpc::ClientContext context;
  Prepare(&context);
  v1::WatchWorkflowRequest request;
  request.set_name(workflow);
  auto reader = stub_->WatchWorkflow(&context, request);
  v1::WorkflowEvent event;
  std::optional<v1::Workflow> last;
  while (reader->Read(&event)) {
    on_version(event.snapshot());
    last = event.snapshot();
  }
  absl::Status status = Explain(FromGrpcStatus(reader->Finish()));
  if (!status.ok()) return status;
  if (!last) return absl::InternalError(absl::StrCat("the watch of ", workflow, " sent nothing"));
  return *last;
}

void CoordinatorClient::Prepare(grpc::ClientContext* context) {
  if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
}

absl::StatusOr<RunWithResults> Fetch(CoordinatorClient& client, const std::string& run) {
  v1::GetRunResultsRequest request;
  request.set_name(RunName(run));
  v1::GetRunResultsResponse response;
  absl::Status s = client.Call(&v1::Coordinator::Stub::GetRunResults, request, &response);
  if (!s.ok()) return s;
  return RunWithResults{response.run(), {response.results().begin(), response.results().end()}};
}

absl::StatusOr<RunWithResults> CreateAndFollow(
    CoordinatorClient& client, const v1::RunSpec& spec,
    const std::function<void(const v1::RunEvent&)>& on_event) {
  v1::CreateRunRequest create;
  *create.mutable_spec() = spec;
  v1::Run run;
  if (absl::Status s = client.Call(&v1::Coordinator::Stub::CreateRun, create, &run); !s.ok()) {
    return s;
  }
  absl::StatusOr<v1::Run> ended = client.Watch(run.name(), on_event);
  if (!ended.ok()) return ended.status();
  return Fetch(client, run.name());
}

absl::StatusOr<std::vector<RunWithResults>> FetchLabelled(CoordinatorClient& client,
                                                          const std::string& key,
                                                          const std::string& value) {
  std::vector<std::string> names;
  v1::ListRunsRequest request;
  request.set_page_size(1000);
  while (true) {
    v1::ListRunsResponse response;
    absl::Status s = client.Call(&v1::Coordinator::Stub::ListRuns, request, &response);
    if (!s.ok()) return s;
    for (const v1::Run& run : response.runs()) {
      auto it = run.spec().labels().find(key);
      if (it != run.spec().labels().end() && it->second == value) names.push_back(run.name());
    }
    if (response.next_page_token().empty()) break;
    request.set_page_token(response.next_page_token());
  }
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat("no run carries the label ", key, "=", value));
  }
  std::reverse(names.begin(), names.end());  // the list is newest first
  std::vector<RunWithResults> runs;
  for (const std::string& name : names) {
    absl::StatusOr<RunWithResults> run = Fetch(client, name);
    if (!run.ok()) return run.status();
    runs.push_back(*std::move(run));
  }
  return runs;
}

}  // namespace collbench

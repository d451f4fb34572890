// SPDX-License-Identifier: Apache-2.0
#include "client/lifecycle_commands.h"

#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/format.h"
#include "google/protobuf/empty.pb.h"

namespace collbench {
namespace {

std::string WorkerName(absl::string_view text) {
  return absl::StartsWith(text, "workers/") ? std::string(text) : absl::StrCat("workers/", text);
}

// Parses the command's flags (none but --help) and calls `each` for every
// name; see the file comment for the exit code. `usage` starts with the
// command's usage line.
int ForEachName(const std::vector<std::string>& args, absl::string_view usage,
                absl::string_view command,
                const std::function<absl::Status(const std::string&)>& each) {
  FlagParser flags;
  if (std::optional<int> stop = ParseCommandFlags(flags, args, usage)) return *stop;
  if (flags.rest().empty()) {
    return Report(absl::InvalidArgumentError(absl::StrCat("usage: ", command)));
  }
  int code = kExitOk;
  for (const std::string& name : flags.rest()) {
    const int done = Report(each(name));
    if (code == kExitOk) code = done;
  }
  return code;
}

// Deletes the resource `name` with `method` (a Delete* call answering
// Empty) and says so.
template <typename Request, typename Method>
absl::Status DeleteOne(CoordinatorClient& client, Method method, const std::string& name) {
  Request request;
  request.set_name(name);
  google::protobuf::Empty empty;
  absl::Status status = client.Call(method, request, &empty);
  if (status.ok()) absl::PrintF("%s: deleted\n", name);
  return status;
}

}  // namespace

int DrainCommand(CoordinatorClient& client, const std::vector<std::string>& args, bool drain) {
  const std::string usage =
      drain ? "usage: collbench drain WORKER...\nThe worker finishes its run and takes no new"
              " one until `collbench undrain WORKER`; the drain holds while it reconnects or"
              " restarts, and across coordinator restarts.\n"
            : "usage: collbench undrain WORKER...\nEnds a drain: the worker takes runs again"
              " (queued runs that fit start on it at once).\n";
  return ForEachName(
      args, usage, drain ? "drain WORKER..." : "undrain WORKER...", [&](const std::string& name) {
        v1::Worker worker;
        absl::Status status;
        if (drain) {
          v1::DrainWorkerRequest request;
          request.set_name(WorkerName(name));
          status = client.Call(&v1::Coordinator::Stub::DrainWorker, request, &worker);
        } else {
          v1::UndrainWorkerRequest request;
          request.set_name(WorkerName(name));
          status = client.Call(&v1::Coordinator::Stub::UndrainWorker, request, &worker);
        }
        if (status.ok()) absl::PrintF("%s: %s\n", worker.name(), WorkerStateText(worker));
        return status;
      });
}

int DeleteRunsCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  return ForEachName(
      args,
      "usage: collbench delete RUN...\nDeletes finished runs (succeeded, failed, cancelled) and"
      " their results from the coordinator's store. A queued or running run is refused:"
      " cancel it first.\n",
      "delete RUN...", [&](const std::string& name) {
        return DeleteOne<v1::DeleteRunRequest>(client, &v1::Coordinator::Stub::DeleteRun,
                                               RunName(name));
      });
}

int ClearWorkersCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  return ForEachName(
      args,
      "usage: collbench workers clear WORKER...\nEnds the quarantine of SUSPECT workers (a hunt"
      " confirmed them bad): they take runs that do not name them again. A later hunt that"
      " measures one healthy clears it too.\n",
      "workers clear WORKER...", [&](const std::string& name) {
        v1::ClearWorkerRequest request;
        request.set_name(WorkerName(name));
        v1::Worker worker;
        absl::Status status = client.Call(&v1::Coordinator::Stub::ClearWorker, request, &worker);
        if (status.ok()) absl::PrintF("%s: cleared, %s\n", worker.name(), WorkerStateText(worker));
        return status;
      });
}

int DeleteWorkersCommand(CoordinatorClient& client, const std::vector<std::string>& args) {
  return ForEachName(
      args,
      "usage: collbench workers delete WORKER...\nForgets workers that are gone (lost): their"
      " rows and secrets, so the names may join anew. A connected worker is refused: drain"
      " it, stop it, then delete it. Runs keep naming it.\n",
      "workers delete WORKER...", [&](const std::string& name) {
        return DeleteOne<v1::DeleteWorkerRequest>(client, &v1::Coordinator::Stub::DeleteWorker,
                                                  WorkerName(name));
      });
}

}  // namespace collbench

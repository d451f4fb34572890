// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/launch_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "api/tuning_env.h"
#include "common/host_port.h"
#include "common/progress_slot.h"
#include "flavors/registry.h"
#include "worker/agent/launch_shim.h"
#include "worker/agent/tuning_files.h"

namespace collbench {
namespace {

// The name the MPI launcher uses for peer i. A worker launching its own
// run is "localhost" to it, so its ranks start without the shim; a
// launcher (collbench-launcher) hosts no ranks and reaches every peer
// through the shim.
std::string AliasFor(const v1::Peer& peer, int index, bool self_is_rank0) {
  if (index == 0 && self_is_rank0) return "localhost";
  return peer.host_alias().empty() || peer.host_alias() == "localhost" ? absl::StrCat("w", index)
                                                                       : peer.host_alias();
}

LaunchTransport ToLaunchTransport(v1::Transport transport) {
  switch (transport) {
    case v1::SHM: return LaunchTransport::kShm;
    case v1::TCP: return LaunchTransport::kTcp;
    case v1::UCX: return LaunchTransport::kUcx;
    default: return LaunchTransport::kAuto;
  }
}

// One "ALIAS:SLOTS" host per peer in rank order, and the shim's map of
// the peers' aliases to their Agent addresses.
absl::Status AddHosts(const v1::Assignment& assignment, bool self_is_rank0, LaunchRequest* request,
                      std::vector<std::string>* hostmap) {
  for (int i = 0; i < assignment.peers_size(); ++i) {
    const v1::Peer& peer = assignment.peers(i);
    if (peer.slots() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment gives ", peer.worker(), " no slots"));
    }
    const std::string alias = AliasFor(peer, i, self_is_rank0);
    request->hosts.push_back(absl::StrCat(alias, ":", peer.slots()));
    if (i > 0 || !self_is_rank0) hostmap->push_back(absl::StrCat(alias, "=", peer.agent_address()));
    request->ranks += peer.slots();
  }
  return absl::OkStatus();
}

// spec.env as given (request->spec_env) and as the ranks get it (run_env):
// a tuning file's bare name in this worker's tuning folder is handed on as
// its real path, which the ranks here and on peers read.
absl::Status AddRunEnv(const v1::RunSpec& spec, const std::string& tuning_dir,
                       LaunchRequest* request, EnvMap* run_env) {
  for (const auto& [key, value] : spec.env()) {
    request->spec_env[key] = value;
    if (!IsTuningFileParam(key)) {
      (*run_env)[key] = value;
      continue;
    }
    absl::StatusOr<std::string> file = ResolveTuningFile(tuning_dir, key, value);
    if (!file.ok()) {
      return absl::Status(file.status().code(), absl::StrCat("spec.env.", file.status().message()));
    }
    (*run_env)[key] = *file;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MakeShimLink(const std::string& link, const std::string& self) {
  unlink(link.c_str());
  if (symlink(self.c_str(), link.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot link the launch shim ", link, " to ", self,
                                            ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<LaunchCommand> BuildLaunchCommand(const v1::Assignment& assignment,
                                                 const std::string& self_worker,
                                                 const LaunchPaths& paths,
                                                 const LaunchEnvironment& environment) {
  if (assignment.peers_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment for ", assignment.run(), " names no workers"));
  }
  // A worker launches only a run whose rank 0 it hosts; a launcher
  // (launchers/{id}) hosts none.
  const bool self_is_rank0 = assignment.peers(0).worker() == self_worker;
  if (!self_is_rank0 && !absl::StartsWith(self_worker, kLauncherNamePrefix)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment for ", assignment.run(), " puts rank 0 on ", assignment.peers(0).worker(),
        ", not on this worker (", self_worker, ")"));
  }
  const v1::RunSpec& spec = assignment.spec();
  // Validation checked these when the run was created; a launcher checks
  // again what it is about to put on a command line or in an environment.
  if (absl::Status s = CheckEngineArgWords(spec); !s.ok()) return s;
  for (const auto& [key, value] : spec.env()) {
    if (absl::Status s = CheckTuningParam(key, value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.env.", s.message()));
    }
  }
  const MpiFlavor& flavor = FlavorFor(spec.mpi());
  auto installed = paths.flavors.find(flavor.name());
  if (installed == paths.flavors.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("spec.mpi: ", flavor.display_name(), " is not installed on this worker"));
  }
  LaunchRequest request;
  std::vector<std::string> hostmap;
  if (absl::Status s = AddHosts(assignment, self_is_rank0, &request, &hostmap); !s.ok()) {
    return s;
  }
  EnvMap run_env;  // the run's settings, then the flavour's own
  if (absl::Status s = AddRunEnv(spec, paths.tuning_dir, &request, &run_env); !s.ok()) return s;
  // Every rank, on every host, learns where its progress slot goes.
  if (const std::string dir = ProgressDirOf(paths.progress_root, assignment.run());
      !dir.empty()) {
    request.spec_env[kProgressDirEnv] = dir;
    run_env[kProgressDirEnv] = dir;
  }
  request.launcher = installed->second.launcher;
  request.rank_binary = installed->second.rank_binary;
  request.shim_command = absl::StrCat(paths.self, " ", kShimWord);
  request.shim_link = paths.shim_link;
  request.self_host =
      self_is_rank0 ? HostOf(assignment.peers(0).agent_address()) : paths.launcher_host;
  request.mpi_interface = paths.mpi_interface;
  request.transport = ToLaunchTransport(spec.transport());
  request.shared_ipc = assignment.shared_ipc();
  request.as_root = geteuid() == 0;
  LaunchCommand command;
  command.argv = flavor.LaunchArgv(request, &run_env);
  for (std::string& arg : EngineArgs(spec)) command.argv.push_back(std::move(arg));
  command.env = environment.base;
  command.env[kRunEnv] = assignment.run();
  command.env[kRunTokenFileEnv] = environment.token_file;
  command.env[kHostMapEnv] = absl::StrJoin(hostmap, ",");
  // Not secrets: where the shim finds the Agent TLS files (agent_tls.h).
  for (const auto& [key, value] : paths.shim_env) command.env[key] = value;
  for (const auto& [key, value] : run_env) command.env[key] = value;
  return command;
}

}  // namespace collbench

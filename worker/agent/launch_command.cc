#include "worker/agent/launch_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "api/tuning_env.h"
#include "common/host_port.h"
#include "worker/agent/launch_shim.h"
#include "worker/agent/tuning_files.h"

namespace collbench {
namespace {

// The name the MPI launcher uses for peer i. The launcher's own entry is
// "localhost" so its ranks start without the shim.
std::string AliasFor(const v1::Peer& peer, int index) {
  if (index == 0) return "localhost";
  return peer.host_alias().empty() ? absl::StrCat("w", index) : peer.host_alias();
}

// Open MPI: choose the byte transfer layers (or UCX) by MCA parameter.
void OpenMpiTransport(v1::Transport transport, std::vector<std::string>* argv) {
  auto mca = [argv](const char* name, const char* value) {
    argv->insert(argv->end(), {"--mca", name, value});
  };
  switch (transport) {
    case v1::SHM:
      mca("pml", "ob1");
      mca("btl", "self,vader");
      break;
    case v1::TCP:
      mca("pml", "ob1");
      mca("btl", "self,tcp");
      break;
    case v1::UCX:
      mca("pml", "ucx");
      break;
    default:
      break;
  }
}

// MPICH (ch4 over UCX on Debian): UCX's transports, and no shared memory
// between local ranks when TCP is asked for.
void MpichTransport(v1::Transport transport, std::map<std::string, std::string>* env) {
  switch (transport) {
    case v1::SHM:
      (*env)["UCX_TLS"] = "self,sm";
      break;
    case v1::TCP:
      (*env)["UCX_TLS"] = "self,tcp";
      (*env)["MPIR_CVAR_NOLOCAL"] = "1";
      break;
    default:
      break;
  }
}

// MPICH, SHM between ranks of different workers that share one IPC (and
// PID) namespace (assignment.shared_ipc). Hydra makes each worker a node
// of its own, and MPICH's shared-memory module joins only the ranks of one
// node; ranks on different nodes go through its network module, UCX on
// Debian, so that is where shared memory is put: UCX's shared-memory
// transports (posix and sysv segments, cma) reach any peer on the same
// kernel (boot id) and IPC namespace. Validation admits this only within
// one PID namespace (api/ipc_sharing.h). As for the other transports,
// these settings win over the run's own. (Open MPI cannot do this:
// validation refuses it, see api/validation.h.)
std::map<std::string, std::string> SharedIpcEnv(const v1::Assignment& assignment) {
  std::map<std::string, std::string> env;
  if (!assignment.shared_ipc() || assignment.spec().transport() != v1::SHM) return env;
  env["UCX_TLS"] = "self,sm";
  return env;
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
  if (assignment.peers(0).worker() != self_worker) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment for ", assignment.run(), " puts rank 0 on ", assignment.peers(0).worker(),
        ", not on this worker (", self_worker, ")"));
  }
  const v1::RunSpec& spec = assignment.spec();
  const bool mpich = spec.mpi() == v1::MPICH;
  // Validation checked these when the run was created; a launcher checks
  // again what it is about to put on a command line or in an environment.
  if (absl::Status s = CheckEngineArgWords(spec); !s.ok()) return s;
  for (const auto& [key, value] : spec.env()) {
    if (absl::Status s = CheckTuningParam(key, value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.env.", s.message()));
    }
  }
  LaunchCommand command;
  command.env = environment.base;
  // Put on mpiexec's command line for MPICH (-genv): the run's settings.
  std::map<std::string, std::string> run_env;
  std::vector<std::string> hosts, hostmap;
  int ranks = 0;
  for (int i = 0; i < assignment.peers_size(); ++i) {
    const v1::Peer& peer = assignment.peers(i);
    if (peer.slots() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment gives ", peer.worker(), " no slots"));
    }
    const std::string alias = AliasFor(peer, i);
    hosts.push_back(absl::StrCat(alias, ":", peer.slots()));
    if (i > 0) hostmap.push_back(absl::StrCat(alias, "=", peer.agent_address()));
    ranks += peer.slots();
  }
  command.env[kRunEnv] = assignment.run();
  command.env[kRunTokenFileEnv] = environment.token_file;
  command.env[kHostMapEnv] = absl::StrJoin(hostmap, ",");
  // Not secrets: where the shim finds the Agent TLS files (agent_tls.h).
  for (const auto& [key, value] : paths.shim_env) command.env[key] = value;
  for (const auto& [key, value] : spec.env()) {
    if (!IsTuningFileParam(key)) {
      run_env[key] = value;
      continue;
    }
    // A bare name in this worker's tuning folder, handed on as its real
    // path: the ranks here and on peers read that path.
    absl::StatusOr<std::string> file = ResolveTuningFile(paths.tuning_dir, key, value);
    if (!file.ok()) {
      return absl::Status(file.status().code(), absl::StrCat("spec.env.", file.status().message()));
    }
    run_env[key] = *file;
  }
  if (geteuid() == 0) {  // containers often run as root; Open MPI refuses unless told
    run_env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    run_env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  }
  std::vector<std::string>& argv = command.argv;
  if (mpich) {
    argv = {paths.mpich_mpiexec, "-n", absl::StrCat(ranks), "-hosts", absl::StrJoin(hosts, ","),
            "-launcher", "ssh", "-launcher-exec", paths.mpich_shim_link};
    // The proxies on peers call mpiexec back at this host, by default its
    // host name, which need not resolve there; the address this worker
    // advertises to its peers reaches it by definition.
    const std::string self_host = HostOf(assignment.peers(0).agent_address());
    if (!self_host.empty()) argv.insert(argv.end(), {"-localhost", self_host});
    MpichTransport(spec.transport(), &run_env);
    for (const auto& [key, value] : SharedIpcEnv(assignment)) run_env[key] = value;
    // UCX takes devices by name only (a CIDR is left out), and picks the
    // loopback or any other network otherwise. The run's own
    // UCX_NET_DEVICES wins.
    if (!paths.mpi_interface.empty() && paths.mpi_interface.find('/') == std::string::npos &&
        !spec.env().contains("UCX_NET_DEVICES")) {
      run_env["UCX_NET_DEVICES"] = paths.mpi_interface;
    }
    for (const auto& [key, value] : run_env) argv.insert(argv.end(), {"-genv", key, value});
    argv.push_back(paths.rank_mpich);
  } else {
    // mpirun starts every daemon itself (no tree spawn), and the daemons
    // stay in the Exec call's process group (leave_session_attached) so
    // ending the call ends them. Several daemons on one machine need the
    // PMIx hash store instead of the shared-memory one.
    run_env["PMIX_MCA_gds"] = "hash";
    // Each daemon would also write its hwloc topology into a shared-memory
    // mapping placed in the largest hole of its address space; with several
    // daemons starting on one machine, about one start in eight crashed
    // there (SIGSEGV in hwloc_shmem_topology_write). Ranks then read the
    // topology themselves, which costs start-up time only.
    // --noprefix: started by its absolute path, mpirun would otherwise put
    // `PATH=<prefix>/bin:$PATH ; export PATH ; ...` in front of orted, a
    // command line only a shell can run (the shim refuses it).
    argv = {paths.openmpi_mpirun, "--noprefix", "-np", absl::StrCat(ranks), "--host",
            absl::StrJoin(hosts, ","),
            "--mca", "plm_rsh_agent", absl::StrCat(paths.self, " launch-shim"),
            "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "orte_leave_session_attached", "1",
            "--mca", "rtc_hwloc_vmhole", "none", "--bind-to", "none"};
    if (!paths.mpi_interface.empty()) {  // daemons call back, and ranks connect, only there
      argv.insert(argv.end(), {"--mca", "oob_tcp_if_include", paths.mpi_interface, "--mca",
                               "btl_tcp_if_include", paths.mpi_interface});
    }
    OpenMpiTransport(spec.transport(), &argv);
    for (const auto& [key, value] : spec.env()) argv.insert(argv.end(), {"-x", key});
    argv.push_back(paths.rank_openmpi);
  }
  for (std::string& arg : EngineArgs(spec)) argv.push_back(std::move(arg));
  for (const auto& [key, value] : run_env) command.env[key] = value;
  return command;
}

}  // namespace collbench

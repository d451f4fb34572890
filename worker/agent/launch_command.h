// SPDX-License-Identifier: Apache-2.0
// Builds the command the launcher worker runs for an assignment
// (docs/design/run-lifecycle.md#launch): the MPI launcher of the run's flavour
// (flavors/mpi_flavor.h) with this worker's binary as the remote-shell agent, one
// host entry per worker in rank order, the transport and the run's tuning
// parameters as the flavour passes them, and its rank binary with the engine
// flags. The result is an argv (no shell) and the complete environment of mpirun /
// mpiexec (which their local ranks inherit): the worker's allowed variables
// (clean_env.h), the transport settings, spec.env (checked again against
// api/tuning_env.h), COLLBENCH_RUN, COLLBENCH_HOSTMAP and the path of the run's
// token file. The token itself is never in it.
//
// Peers other than the launcher itself are named by aliases (w1, w2, ...)
// that the launch shim maps to their Agent addresses through COLLBENCH_HOSTMAP;
// the launcher's own ranks are started locally by the MPI launcher.
#ifndef COLLBENCH_WORKER_AGENT_LAUNCH_COMMAND_H_
#define COLLBENCH_WORKER_AGENT_LAUNCH_COMMAND_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collbench/v1/gateway.pb.h"

namespace collbench {

// Where a flavour's programs are installed on this worker.
struct FlavorPaths {
  std::string launcher;     // e.g. /usr/bin/mpirun.openmpi (MpiFlavor::launcher_program)
  std::string rank_binary;  // e.g. /opt/cb/collbench-rank (MpiFlavor::rank_binary)
};

// The name prefix of a launcher (collbench-launcher) on the coordinator.
inline constexpr char kLauncherNamePrefix[] = "launchers/";

struct LaunchPaths {
  std::string self;  // this worker binary (the shim is `self launch-shim`)
  // Per flavour name (flavors/registry.h): its launcher and rank binary.
  std::map<std::string, FlavorPaths, std::less<>> flavors;
  // Launchers that take their remote-shell agent as one word
  // (MpiFlavor::needs_shim_link) reach the shim through a symbolic link to
  // `self` named collbench-launch-shim (kShimLinkName in launch_shim.h),
  // which collbench-worker's main() recognises. No script, no shell. Per
  // run (the launcher makes it in the run's directory).
  std::string shim_link;
  // Not a path: the network MPI's own TCP traffic between hosts uses, an
  // interface name ("eth0") or a CIDR ("10.0.0.0/16"); empty: MPI's choice.
  // Each flavour hands it to its library as that library takes it
  // (MpiFlavor::LaunchArgv).
  std::string mpi_interface;
  // Not secret: added to mpirun's environment for the launch shim (the
  // Agent TLS file paths, agent_tls.h ShimTlsEnv).
  std::map<std::string, std::string> shim_env;
  // The worker's --tuning-dir (empty: none). A tuning-file parameter of
  // spec.env (api/tuning_env.h) names a file there by its bare name; the
  // command carries its resolved path (tuning_files.h).
  std::string tuning_dir;
  // Where the ranks' progress slots go (common/progress_slot.h): each run
  // in ROOT/ID, handed to every rank as COLLBENCH_PROGRESS_DIR. Empty: no
  // slots (no hang diagnosis).
  std::string progress_root;
  // A launcher's own (collbench-launcher) host as the run's daemons reach
  // it: MPICH's -localhost. Workers launching their own run use their
  // Agent address's host instead.
  std::string launcher_host;
};

// Makes `link` a symbolic link to `self` (replacing what was there).
absl::Status MakeShimLink(const std::string& link, const std::string& self);

struct LaunchCommand {
  std::vector<std::string> argv;
  // The complete environment of mpirun / mpiexec (the shim reads
  // COLLBENCH_RUN, COLLBENCH_HOSTMAP and COLLBENCH_RUN_TOKEN_FILE from it).
  std::map<std::string, std::string> env;
};

// What the run's environment starts from and where its token lies.
struct LaunchEnvironment {
  std::map<std::string, std::string> base;  // AllowedOwnEnvironment() of the worker
  std::string token_file;                   // the run's token, mode 0600
};

// `self_worker` is this worker's name ("workers/{id}"), which must be the
// first peer (rank 0's host), or a launcher's ("launchers/{id}"), which
// hosts no ranks and reaches every peer through the shim. InvalidArgument if the assignment is
// malformed, a spec.env entry is not an allowed tuning parameter
// ("spec.env.KEY: ..."), or an engine field is not one word;
// FailedPrecondition ("spec.env.KEY: tuning file 'NAME' ...") when a
// tuning file is not in paths.tuning_dir or this worker has none, or when
// the run's flavour is not installed here (not in paths.flavors).
absl::StatusOr<LaunchCommand> BuildLaunchCommand(const v1::Assignment& assignment,
                                                 const std::string& self_worker,
                                                 const LaunchPaths& paths,
                                                 const LaunchEnvironment& environment);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_LAUNCH_COMMAND_H_

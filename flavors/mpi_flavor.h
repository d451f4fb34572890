// SPDX-License-Identifier: Apache-2.0
// An MPI implementation as a plug-in
// (docs/design/layout.md#mpi-implementations-as-plug-ins,
// docs/design/run-lifecycle.md#launch): what collbench needs to know about one
// MPI library, its binaries, how a run is launched with it, which daemons its
// launcher starts on peers and with which arguments, its collective-algorithm
// parameters and how its version line reads. One implementation per library,
// one file each (flavors/open_mpi.cc, flavors/mpich.cc), registered explicitly
// in flavors/builtin.cc; everything else asks the registry (registry.h) and
// never compares against a library's name.
//
// MPI-free and proto-free: the callers translate their protos into the
// plain structs below. Implementations hold no state: every method is
// const and thread-safe.
#ifndef COLLBENCH_FLAVORS_MPI_FLAVOR_H_
#define COLLBENCH_FLAVORS_MPI_FLAVOR_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "flavors/tuning_param.h"

namespace collbench {

using EnvMap = std::map<std::string, std::string>;

// The transport a run asks for (collbench.v1.Transport without the proto).
enum class LaunchTransport { kAuto, kShm, kTcp, kUcx };

// Everything a flavour needs to write the launcher's command line.
struct LaunchRequest {
  std::vector<std::string> hosts;  // "ALIAS:SLOTS" in rank order; the first is this worker
  int ranks = 0;                   // the sum of the slots
  std::string launcher;            // the installed launcher program (launcher_program())
  std::string rank_binary;         // the installed rank binary (rank_binary())
  // The remote-shell agent as one command line ("<worker> launch-shim"),
  // and the per-run link to the worker binary for launchers that take the
  // agent as one word (needs_shim_link()).
  std::string shim_command;
  std::string shim_link;
  std::string self_host;      // the host peers reach this worker at ("" if unknown)
  std::string mpi_interface;  // interface name or CIDR for MPI's TCP traffic; "": MPI's choice
  LaunchTransport transport = LaunchTransport::kAuto;
  bool shared_ipc = false;  // the workers share one IPC and PID namespace
  bool as_root = false;     // the launcher runs as root
  EnvMap spec_env;          // the run's own spec.env, as given
};

// How a daemon's arguments are checked against the run's tuning
// parameters (api/tuning_env.h) and this worker's tuning folder
// (worker/agent/tuning_files.h), handed in by the caller so that this
// library depends on neither. Keys are environment variable names.
struct DaemonArgChecks {
  std::function<bool(absl::string_view key)> is_tuning_param;
  std::function<bool(absl::string_view key)> is_tuning_file_param;
  std::function<absl::Status(absl::string_view key, absl::string_view value)> check_tuning_param;
  std::function<absl::Status(absl::string_view key, absl::string_view path)> check_tuning_file;
  std::string shim_word;       // the agent's last word: "launch-shim"
  std::string shim_link_name;  // the shim link's file name: "collbench-launch-shim"
};

// What names a library, its programs and its variables: data, given by
// each flavour to the base class.
struct FlavorFacts {
  // The lower-case name used by --mpi, inventories, metrics and the
  // advisor ("openmpi"), and the value of collbench.v1.MpiImplementation
  // that RunSpec.mpi carries for it.
  std::string name;
  int id = 0;
  // How the library names itself ("Open MPI"): in messages, and in the
  // first line of MPI_Get_library_version.
  std::string display_name;
  std::string launcher_program;      // looked up on PATH ("mpirun.openmpi")
  std::string rank_binary;           // beside the worker binary ("collbench-rank")
  std::vector<std::string> daemons;  // what the launcher starts on peers through Exec
  // Settings the library needs to run as root (containers often do): the
  // launch adds them when the launcher runs as root, and a root worker
  // passes them on from its own environment (worker/agent/clean_env.h).
  EnvMap root_env;
  // The variables the library's launcher sets to a rank's index in the
  // job, readable before MPI_Init.
  std::vector<std::string> rank_variables;
  // Prefixes of the variables that tune the library (recorded in the
  // engine's environment fingerprint; its tuning parameters lie there).
  std::vector<std::string> env_prefixes;
  // Prefixes, among those, of the variables its launcher sets for each job
  // (addresses, session folders, job ids): they change from run to run
  // without tuning anything, so the fingerprint leaves them out.
  std::vector<std::string> launch_env_prefixes;
};

class MpiFlavor {
 public:
  explicit MpiFlavor(FlavorFacts facts) : facts_(std::move(facts)) {}
  virtual ~MpiFlavor() = default;
  MpiFlavor(const MpiFlavor&) = delete;
  MpiFlavor& operator=(const MpiFlavor&) = delete;

  // --- Identity and binaries (FlavorFacts) ---------------------------------
  absl::string_view name() const { return facts_.name; }
  int id() const { return facts_.id; }
  absl::string_view display_name() const { return facts_.display_name; }
  absl::string_view launcher_program() const { return facts_.launcher_program; }
  absl::string_view rank_binary() const { return facts_.rank_binary; }
  const std::vector<std::string>& daemons() const { return facts_.daemons; }
  const EnvMap& RootEnv() const { return facts_.root_env; }
  const std::vector<std::string>& RankVariables() const { return facts_.rank_variables; }
  const std::vector<std::string>& EnvPrefixes() const { return facts_.env_prefixes; }
  const std::vector<std::string>& LaunchEnvPrefixes() const { return facts_.launch_env_prefixes; }
  // Whether `version` (MPI_Get_library_version's first line) is this
  // library's: it names the library.
  bool IsVersionLine(absl::string_view version) const;

  // --- Launch ------------------------------------------------------------
  // True when the launcher takes its remote-shell agent as one program
  // path, so the launcher worker makes request.shim_link per run.
  virtual bool needs_shim_link() const = 0;
  // The launcher's argv, from request.launcher to request.rank_binary
  // (the engine's flags follow). `run_env` holds the run's settings
  // (spec.env with tuning files resolved) on entry; the flavour adds its
  // own, and the caller puts them all in the launcher's environment.
  virtual std::vector<std::string> LaunchArgv(const LaunchRequest& request,
                                              EnvMap* run_env) const = 0;
  // Checks a daemon's arguments (argv[1..], argv[0] being one of
  // daemons()) against what this library's launcher passes. OK, or
  // InvalidArgument from BadDaemonWord (daemon_words.h) naming the word.
  virtual absl::Status CheckDaemonArgs(const std::vector<std::string>& argv,
                                       const DaemonArgChecks& checks) const = 0;
  // Settings every daemon of this library gets on a worker whose ranks
  // keep their shared-memory segments in `dir` (empty: none).
  virtual EnvMap SegmentDirEnv(const std::string& dir) const = 0;
  // Whether ranks on different workers (different nodes to the launcher)
  // can use shared memory when the workers share IPC and PID namespaces.
  virtual bool ShmAcrossWorkers() const = 0;

  // --- Tuning and collective algorithms ----------------------------------
  // The library's own tuning parameters a run may set, in documentation order.
  virtual std::vector<FlavorParam> TuningParams() const = 0;
  // The algorithms the library offers for `operation`, as it names them;
  // empty when it offers no choice.
  virtual const std::vector<std::string>& Algorithms(absl::string_view operation) const = 0;
  // The environment that forces `algorithm` for `operation` at every size.
  // REQUIRES: `algorithm` is one of Algorithms(operation).
  virtual EnvMap AlgorithmEnv(absl::string_view operation, absl::string_view algorithm) const = 0;
  // The algorithm `env` forces for `operation` as the library reads it, or
  // "" when the library chooses.
  virtual std::string ForcedAlgorithm(absl::string_view operation, const EnvMap& env) const = 0;
  // Whether `key` is one of the variables ForcedAlgorithm reads (or the
  // switch that enables them): it names an algorithm, not a setting.
  virtual bool IsAlgorithmVariable(absl::string_view key) const = 0;
  // The one variable that forces `operation`'s algorithm by name for every
  // size, or "" when the library has none.
  virtual std::string AlgorithmVariable(absl::string_view operation) const = 0;
  // For libraries that read per-size rules files with numbered algorithms:
  // the collective's id in such a file (-1: none) and the algorithm's
  // number (from 1; 0: none, the library's own choice).
  virtual int RulesFileCollectiveId(absl::string_view operation) const = 0;
  virtual int AlgorithmNumber(absl::string_view operation, absl::string_view algorithm) const = 0;
  // The settings that make a run load such a rules file, named by its bare
  // `file_name` (the workers find it in their --tuning-dir); empty for a
  // library that reads none.
  virtual EnvMap RulesFileEnv(absl::string_view file_name) const = 0;

  // --- Defects -------------------------------------------------------------
  // OK, or InvalidArgument naming the defect when this library cannot run
  // `operation` in place (MPI_IN_PLACE) at `root`; checked on every rank
  // before anything runs, rather than letting the job crash.
  virtual absl::Status CheckInPlace(absl::string_view operation, int root) const = 0;

 private:
  const FlavorFacts facts_;
};

// Algorithm names by operation, and the list for one (empty when none).
using AlgorithmLists = std::map<std::string, std::vector<std::string>, std::less<>>;
const std::vector<std::string>& AlgorithmsIn(const AlgorithmLists& lists,
                                             absl::string_view operation);

// The MPI call collbench's `operation` runs, lower case (reduce_scatter
// runs MPI_Reduce_scatter_block), as the libraries name their parameters.
std::string LibraryOperation(absl::string_view operation);

}  // namespace collbench

#endif  // COLLBENCH_FLAVORS_MPI_FLAVOR_H_

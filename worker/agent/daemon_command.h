// What Exec may run (DESIGN §5, "No shell anywhere on the launch path"):
// only the MPI daemon a launcher starts on a peer, Open MPI's orted (prted
// for PRRTE-based releases) or MPICH hydra's hydra_pmi_proxy, taken from
// this worker's own installation, with its arguments passed verbatim.
//
// The request's argv[0] only names which daemon (its basename, surrounding
// blanks trimmed: Open MPI writes " orted"); the program run is the path
// resolved here at start-up, never one from the request. The arguments are
// checked against what the launchers emit, as defense in depth against a
// compromised launcher worker (the run's rank programs are its choice
// anyway, but it must not slip a fork agent or a parameter file into a
// peer's daemon):
//   orted: only `-mca KEY VALUE` / `--mca KEY VALUE` triples (and
//     --tree-spawn / --leave-session-attached). KEY is one mpirun itself
//     passes (observed with Open MPI 4.1: ess*, orte_hnp_uri, orte_node_regex,
//     plm, pmix, ..., and the launcher's own --mca settings) or a tuning
//     parameter of api/tuning_env.h whose VALUE matches its grammar; for a
//     tuning-file parameter (coll_tuned_dynamic_rules_filename) the VALUE
//     is the path the launcher resolved, accepted only as a regular file
//     inside this worker's own --tuning-dir (tuning_files.h).
//     plm_rsh_agent must be "<path>/<binary> launch-shim".
//   hydra_pmi_proxy: only its own options (--control-port, --proxy-id, ...),
//     each with one value word.
// No word may contain a NUL or a line break. A run may start only the
// daemon of its own library (the coordinator's RunToken says which): orted
// or prted for Open MPI, hydra_pmi_proxy for MPICH.
//
// Pure functions; thread-safe.
#ifndef COLLBENCH_WORKER_AGENT_DAEMON_COMMAND_H_
#define COLLBENCH_WORKER_AGENT_DAEMON_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

// The daemons of this worker's installation; empty when not installed.
struct DaemonPaths {
  std::string orted;            // Open MPI 4.x
  std::string prted;            // Open MPI 5 (PRRTE)
  std::string hydra_pmi_proxy;  // MPICH hydra
};

// Finds each daemon beside the MPI launcher (`openmpi_mpirun`,
// `mpich_mpiexec`, as given and with symbolic links resolved), else on the
// worker's PATH. Call once at start-up.
DaemonPaths ResolveDaemonPaths(const std::string& openmpi_mpirun, const std::string& mpich_mpiexec);

// The argv to run for a requested daemon argv of a run of library `mpi`
// (MPI_IMPLEMENTATION_UNSPECIFIED is Open MPI): argv[0] replaced by the
// installed daemon's path, the rest unchanged. `tuning_dir` is this
// worker's --tuning-dir (real path; empty: none). InvalidArgument naming
// the offending word otherwise (not a daemon, not the daemon of the run's
// library, a daemon not installed here, an argument the daemon's launcher
// does not pass, a tuning file outside `tuning_dir`).
absl::StatusOr<std::vector<std::string>> CheckDaemonArgv(const std::vector<std::string>& argv,
                                                         const DaemonPaths& paths,
                                                         v1::MpiImplementation mpi,
                                                         const std::string& tuning_dir);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_DAEMON_COMMAND_H_

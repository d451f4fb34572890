// SPDX-License-Identifier: Apache-2.0
// What Exec may run (docs/design/security.md#no-shell-on-the-launch-path):
// only an MPI daemon a launcher starts on a peer (MpiFlavor::daemons, e.g.
// orted or hydra_pmi_proxy), taken from this worker's own installation,
// with its arguments passed verbatim.
//
// The request's argv[0] only names which daemon (its basename, surrounding
// blanks trimmed: some launchers write " orted"); the program run is the
// path resolved here at start-up, never one from the request. The
// arguments are checked by the daemon's flavour against what its launcher
// emits (MpiFlavor::CheckDaemonArgs), as defense in depth against a
// compromised launcher worker (the run's rank programs are its choice
// anyway, but it must not slip a fork agent or a parameter file into a
// peer's daemon): only the daemon's own options, tuning parameters of
// api/tuning_env.h whose VALUE matches its grammar, and a tuning file only
// as the path the launcher resolved, a regular file inside this worker's
// own --tuning-dir (tuning_files.h).
// No word may contain a NUL or a line break. A run may start only the
// daemons of its own library (the coordinator's RunToken says which).
//
// Pure functions; thread-safe.
#ifndef COLLBENCH_WORKER_AGENT_DAEMON_COMMAND_H_
#define COLLBENCH_WORKER_AGENT_DAEMON_COMMAND_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

// The daemons of this worker's installation by name (MpiFlavor::daemons);
// a daemon not installed has no entry or an empty path.
using DaemonPaths = std::map<std::string, std::string, std::less<>>;

// Finds each flavour's daemons beside its MPI launcher (`launchers`: the
// launcher's path by flavour name, as given and with symbolic links
// resolved), else on the worker's PATH. Call once at start-up.
DaemonPaths ResolveDaemonPaths(const std::map<std::string, std::string>& launchers);

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

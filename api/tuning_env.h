// SPDX-License-Identifier: Apache-2.0
// The tuning parameters a run spec may set (spec.env,
// docs/design/security.md#tuning-parameters): one table, each parameter with
// the grammar of its value (flavors/tuning_param.h): the MPI libraries' own, as
// each flavour lists them (MpiFlavor::TuningParams), then UCX's and NCCL's. The
// list and the reasons are in docs/tuning-parameters.md; this file is its only
// owner. Used by request validation (api/validation) and again by the launcher
// before it puts a value into the MPI launcher's environment, and by Exec for
// the parameters on a daemon's command line (defense in depth).
//
// A key that names a program, library, plugin, file or directory (fork
// agents, *_PLUGIN, *_path, *_dir, *_file, LD_*, parameter files, ...) is
// refused whether or not the table knows it: such a value makes MPI, UCX or
// NCCL load or run something of the requester's choosing. Unknown keys are
// refused too. The one exception are tuning files (kTuningFile): data-only
// files an operator installs in a worker's --tuning-dir (e.g. collective
// selection rules). A run names
// one by its bare file name; the launcher resolves it inside its own
// --tuning-dir (worker/agent/tuning_files.h), and a peer's Exec accepts the
// resolved path only inside its own. Values never reach a shell, but each grammar still keeps
// them free of '/', quotes, spaces and shell metacharacters, and none may
// start with '-' (no value can become a flag).
//
// No MPI, no state: thread-safe.
#ifndef COLLBENCH_API_TUNING_ENV_H_
#define COLLBENCH_API_TUNING_ENV_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "flavors/tuning_param.h"

namespace collbench {

// Every parameter a run may set, in the order of the documentation.
const std::vector<TuningParam>& TuningParams();

// A short description of a grammar, for messages and the documentation.
absl::string_view TuningGrammarText(TuningGrammar grammar);

// Whether `key` is in the table (whatever its value).
bool IsTuningParam(absl::string_view key);

// Whether `key` names something MPI, UCX or NCCL would load, run, read or
// write (see above). Checked before the table. False for the tuning-file
// parameters, whose file is confined to the worker's --tuning-dir.
bool NamesProgramOrFile(absl::string_view key);

// Whether `key` is a tuning-file parameter (grammar kTuningFile): its value
// in a spec is a bare file name that the launcher must resolve.
bool IsTuningFileParam(absl::string_view key);

// Whether `name` is a bare tuning-file name: letters, digits, '.', '_', '-',
// not starting with '.' or '-', at most 128 characters (so no '/', no "..",
// no hidden file).
bool IsTuningFileName(absl::string_view name);

// OK when `key` is a known tuning parameter and `value` matches its
// grammar. Otherwise InvalidArgument whose message starts with the key:
//   "OMPI_MCA_orte_fork_agent: names a program, library, plugin, file or
//    directory; such parameters are refused"
//   "FOO_BAR: not a tuning parameter collbench knows (see
//    docs/tuning-parameters.md to propose one)"
//   "NCCL_ALGO: value 'x;y' is not a comma list of identifiers"
// A tuning-file parameter is checked for its grammar only (a bare name);
// whether the file exists is the launcher's question.
absl::Status CheckTuningParam(absl::string_view key, absl::string_view value);

}  // namespace collbench

#endif  // COLLBENCH_API_TUNING_ENV_H_

// The tuning parameters a run spec may set (spec.env, DESIGN §5): one table,
// each parameter with the grammar of its value. The list and the reasons
// are in docs/tuning-parameters.md; this file is its only owner. Used by
// request validation (api/validation) and again by the launcher before it
// puts a value into mpirun's environment, and by Exec for the `-mca KEY
// VALUE` pairs of an Open MPI daemon (defense in depth).
//
// A key that names a program, library, plugin, file or directory (fork
// agents, *_PLUGIN, *_path, *_dir, *_file, LD_*, parameter files, ...) is
// refused whether or not the table knows it: such a value makes MPI, UCX or
// NCCL load or run something of the requester's choosing. Unknown keys are
// refused too. Values never reach a shell, but each grammar still keeps
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

namespace collbench {

enum class TuningGrammar {
  kUnsigned,       // decimal digits: 0, 42
  kSize,           // unsigned with an optional K/M/G suffix: 65536, 64K
  kUcxSize,        // kSize with an optional trailing B, or "inf" / "auto"
  kBool,           // 0 or 1
  kIdentifier,     // [A-Za-z0-9][A-Za-z0-9_.-]*: an algorithm name or number
  kIdentifierList, // identifiers separated by ',', optionally all excluded by a leading '^'
  kInterfaceList,  // interface or device names (eth0, mlx5_0:1, NCCL's =eth0) or IPv4
                   // CIDRs, separated by ','; optionally a leading '^'
};

struct TuningParam {
  const char* name;  // the environment variable, e.g. "NCCL_ALGO"
  TuningGrammar grammar;
};

// Every parameter a run may set, in the order of the documentation.
const std::vector<TuningParam>& TuningParams();

// A short description of a grammar, for messages and the documentation.
absl::string_view TuningGrammarText(TuningGrammar grammar);

// Whether `key` is in the table (whatever its value).
bool IsTuningParam(absl::string_view key);

// Whether `key` names something MPI, UCX or NCCL would load, run, read or
// write (see above). Checked before the table.
bool NamesProgramOrFile(absl::string_view key);

// OK when `key` is a known tuning parameter and `value` matches its
// grammar. Otherwise InvalidArgument whose message starts with the key:
//   "OMPI_MCA_orte_fork_agent: names a program, library, plugin, file or
//    directory; such parameters are refused"
//   "FOO_BAR: not a tuning parameter collbench knows (see
//    docs/tuning-parameters.md to propose one)"
//   "NCCL_ALGO: value 'x;y' is not a comma list of identifiers"
absl::Status CheckTuningParam(absl::string_view key, absl::string_view value);

}  // namespace collbench

#endif  // COLLBENCH_API_TUNING_ENV_H_

// SPDX-License-Identifier: Apache-2.0
// Tuning files (docs/design/security.md#tuning-parameters;
// docs/tuning-parameters.md, "Tuning files"): the data-only files an operator
// installs in a worker's --tuning-dir, such as an Open MPI coll_tuned dynamic
// rules file or an MPICH JSON collective selection file. A run names one by its
// bare name (api/tuning_env.h, kTuningFile); the launcher resolves it here
// before it puts it into mpirun's environment, and a peer's Exec checks that
// the resolved path an Open MPI daemon is handed lies inside its own
// --tuning-dir.
//
// Both follow symbolic links (realpath) and require the result to be a
// regular file strictly inside the folder's own real path, so a link in the
// folder that points elsewhere is refused. Pure functions over the file
// system; thread-safe.
#ifndef COLLBENCH_WORKER_AGENT_TUNING_FILES_H_
#define COLLBENCH_WORKER_AGENT_TUNING_FILES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

// The real path of `dir` for a worker's --tuning-dir: InvalidArgument when
// it is not an existing folder.
absl::StatusOr<std::string> CanonicalTuningDir(const std::string& dir);

// DIR/NAME resolved (its real path) for tuning-file parameter `key`.
// FailedPrecondition naming the key and the file when `tuning_dir` is empty
// (this worker has none), the file is missing, not a regular file, or
// resolves outside the folder; InvalidArgument when `name` is not a bare
// tuning-file name.
absl::StatusOr<std::string> ResolveTuningFile(const std::string& tuning_dir,
                                              absl::string_view key, absl::string_view name);

// For a path a launcher already resolved: OK when `path` is absolute and
// its real path is a regular file inside `tuning_dir`'s real path.
// InvalidArgument naming the key otherwise (also when `tuning_dir` is
// empty).
absl::Status CheckResolvedTuningFile(const std::string& tuning_dir, absl::string_view key,
                                     absl::string_view path);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_TUNING_FILES_H_

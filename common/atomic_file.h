// Writing a whole file so that a reader sees the old contents or the new
// ones, never a part: reports (collbench report) and tuning files
// (collbench advise --write-rules).
#ifndef COLLBENCH_COMMON_ATOMIC_FILE_H_
#define COLLBENCH_COMMON_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace collbench {

// Writes `contents` to `path` through a temporary file in the same folder,
// fsync and a rename. On failure nothing is left behind and `path` is
// unchanged. A file that cannot be created (a missing folder, a typo) is
// InvalidArgument "cannot create PATH: …"; a failed write or rename is
// Unavailable.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_ATOMIC_FILE_H_

// SPDX-License-Identifier: Apache-2.0
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
// unchanged. A missing folder is CheckParentFolder's InvalidArgument, any
// other file that cannot be created InvalidArgument "cannot create PATH:
// …"; a failed write or rename is Unavailable.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

// OK when the folder a file `path` would be created in exists (the current
// folder for a bare name); else InvalidArgument "PATH: the folder DIR does
// not exist" (or "is not a folder"). Nothing is created: a typo in a path
// must not leave folders behind. For checking an output path up front,
// before the work that fills it.
absl::Status CheckParentFolder(const std::string& path);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_ATOMIC_FILE_H_

// SPDX-License-Identifier: Apache-2.0
// What a worker keeps on disk and reads at start for its identity
// (docs/design/security.md#worker-identity): the secret the coordinator issued at the
// name's first registration, in `<state dir>/worker-secret` (mode 0600, the
// directory 0700), presented on every connection; and the join token,
// read from a file or once from COLLBENCH_JOIN_TOKEN, never from argv.
//
// Thread safety: plain functions over files; callers serialize writes of
// one path.
#ifndef COLLBENCH_WORKER_AGENT_WORKER_STATE_H_
#define COLLBENCH_WORKER_AGENT_WORKER_STATE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

inline constexpr char kJoinTokenEnv[] = "COLLBENCH_JOIN_TOKEN";
inline constexpr char kWorkerSecretFile[] = "worker-secret";

// The secret stored at `path`; empty when there is none yet. An error
// naming the path when it exists but cannot be read, or is readable or
// writable by group or others (it was not written by this worker).
absl::StatusOr<std::string> ReadWorkerSecret(const std::string& path);

// Stores `secret` at `path` atomically (a 0600 temporary file, fsync,
// rename), creating its directory with mode 0700 when missing. An error
// naming the path otherwise.
absl::Status WriteWorkerSecret(const std::string& path, absl::string_view secret);

// The join token: the first line of `file` (surrounding whitespace
// dropped) when `file` is given, else COLLBENCH_JOIN_TOKEN, which is then
// removed from this process's environment so no child inherits it; empty
// when neither is set. An error naming the file when it cannot be read or
// is empty.
absl::StatusOr<std::string> ReadJoinToken(const std::string& file);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_WORKER_STATE_H_

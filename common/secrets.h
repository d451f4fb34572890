// SPDX-License-Identifier: Apache-2.0
// Secrets a program is given: a bearer token or a join token in the
// environment (COLLBENCH_TOKEN, COLLBENCH_JOIN_TOKEN) or in a one-token file
// (--token-file, --join-token-file). Shared by the CLI and the coordinator
// (docs/design/security.md#credentials).
//
// Environment secrets are read once and scrubbed: unsetenv() alone leaves
// the bytes in the process's initial environment block, which
// /proc/PID/environ shows to whoever may read it, so the "NAME=value" string
// is overwritten in place first. Children started afterwards do not inherit
// the variable.
//
// Thread safety: TakeSecretFromEnv is not thread safe (the environment is
// process-wide): call it from main() before starting threads. The file
// functions may be called from any thread.
#ifndef COLLBENCH_COMMON_SECRETS_H_
#define COLLBENCH_COMMON_SECRETS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

// The value of the environment variable `name` ("" when unset), which is
// then erased from the process's memory and environment.
std::string TakeSecretFromEnv(const char* name);

// Whether a secret file (tokens, a join token) may be read by every user:
// FailedPrecondition naming the file and its mode when others may read it,
// OK otherwise (a group, such as a pod's fsGroup on a Kubernetes Secret
// volume, may; a file that cannot be stat'ed is OK here, reading it
// reports that). Callers warn with the message.
absl::Status CheckPrivateFile(const std::string& path);

// Reads a one-token file (--join-token-file, --token-file): the first
// line, surrounding white space removed. InvalidArgument naming `flag` and
// the path when it cannot be read or is empty.
absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag, const std::string& path);

// Lower-case hex SHA-256 of `token`: what a run's workers are given of the
// token only its launcher holds (gateway.proto RunToken.token_sha256).
std::string TokenDigest(absl::string_view token);

// Whether `token` is non-empty and its digest is `digest` (TokenDigest),
// compared without an early exit: the time says nothing about how much of
// a guess was right.
bool TokenMatchesDigest(absl::string_view token, absl::string_view digest);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_SECRETS_H_

// SPDX-License-Identifier: Apache-2.0
// Per-worker secrets (docs/design/security.md#worker-identity): the coordinator issues a
// random secret to a worker name at its first registration and keeps only
// its hash; from then on that name is admitted only with the secret, so the
// shared join token admits new names alone and nobody holding it can take
// over a known worker.
//
// The hash is SHA-256 of the secret: the secret is 256 random bits, so no
// salt or stretching is needed (nothing to guess from the hash), and a
// stolen store does not let its reader register as any worker.
//
// Thread safety: free functions without shared state.
#ifndef COLLBENCH_SERVER_CORE_WORKER_CREDENTIALS_H_
#define COLLBENCH_SERVER_CORE_WORKER_CREDENTIALS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench {

// A new secret: 32 random bytes from OpenSSL's CSPRNG, as 64 lower-case hex
// digits. Internal when the generator fails (never a weak secret).
absl::StatusOr<std::string> NewWorkerSecret();

// What the store keeps for `secret`: "sha256:" and 64 hex digits.
std::string HashWorkerSecret(absl::string_view secret);

// Whether `secret` hashes to `stored_hash`. Compares the hashes in constant
// time; an empty secret never matches.
bool WorkerSecretMatches(absl::string_view secret, absl::string_view stored_hash);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_WORKER_CREDENTIALS_H_

// SPDX-License-Identifier: Apache-2.0
#include "server/core/worker_credentials.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/secrets.h"

namespace collbench {
namespace {

constexpr int kSecretBytes = 32;  // 256 bits
constexpr char kHashPrefix[] = "sha256:";

std::string Hex(const unsigned char* bytes, size_t n) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), n));
}

}  // namespace

absl::StatusOr<std::string> NewWorkerSecret() {
  unsigned char bytes[kSecretBytes];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    return absl::InternalError("worker secret: the random generator failed");
  }
  std::string secret = Hex(bytes, sizeof bytes);
  OPENSSL_cleanse(bytes, sizeof bytes);
  return secret;
}

std::string HashWorkerSecret(absl::string_view secret) {
  return absl::StrCat(kHashPrefix, TokenDigest(secret));
}

bool WorkerSecretMatches(absl::string_view secret, absl::string_view stored_hash) {
  // The prefix is no secret; the digest after it is compared in constant time.
  return absl::ConsumePrefix(&stored_hash, kHashPrefix) && TokenMatchesDigest(secret, stored_hash);
}

}  // namespace collbench

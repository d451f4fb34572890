// SPDX-License-Identifier: Apache-2.0
#include "server/core/worker_credentials.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

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
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest);
  return absl::StrCat(kHashPrefix, Hex(digest, sizeof digest));
}

bool WorkerSecretMatches(absl::string_view secret, absl::string_view stored_hash) {
  if (secret.empty()) return false;
  const std::string hash = HashWorkerSecret(secret);
  // Both have the same length when stored_hash is well formed; the length
  // says nothing about the secret.
  if (hash.size() != stored_hash.size()) return false;
  return CRYPTO_memcmp(hash.data(), stored_hash.data(), hash.size()) == 0;
}

}  // namespace collbench

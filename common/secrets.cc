// SPDX-License-Identifier: Apache-2.0
#include "common/secrets.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace collbench {

std::string TakeSecretFromEnv(const char* name) {
  const size_t name_length = std::strlen(name);
  std::string value;
  bool found = false;
  // Every entry of the name (a variable may appear more than once).
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    char* text = *entry;
    if (std::strncmp(text, name, name_length) != 0 || text[name_length] != '=') continue;
    if (!found) value = text + name_length + 1;
    found = true;
    explicit_bzero(text, std::strlen(text));  // not elided, unlike memset
  }
  unsetenv(name);
  return value;
}

absl::Status CheckPrivateFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return absl::OkStatus();
  if ((info.st_mode & S_IROTH) == 0) return absl::OkStatus();
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  return absl::FailedPreconditionError(absl::StrCat(path, " holds secrets but has mode ", mode,
                                                    ": every user may read it (chmod 600 ", path,
                                                    ", or 640 for a group)"));
}

absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag, const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": cannot read '", path, "'"));
  }
  std::string token(absl::StripAsciiWhitespace(line));
  explicit_bzero(line.data(), line.size());
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " ", path, ": the first line holds no token"));
  }
  return token;
}

std::string TokenDigest(absl::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

bool TokenMatchesDigest(absl::string_view token, absl::string_view digest) {
  if (token.empty()) return false;
  const std::string presented = TokenDigest(token);
  // Both are 64 hex digits when `digest` is well formed; its length says
  // nothing about the token.
  return presented.size() == digest.size() &&
         CRYPTO_memcmp(presented.data(), digest.data(), digest.size()) == 0;
}

}  // namespace collbench

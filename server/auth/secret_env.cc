// SPDX-License-Identifier: Apache-2.0
#include "server/auth/secret_env.h"

#include <openssl/crypto.h>

#include <cstdlib>
#include <cstring>

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
    OPENSSL_cleanse(text, std::strlen(text));
  }
  unsetenv(name);
  return value;
}

}  // namespace collbench

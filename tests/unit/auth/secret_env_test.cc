// SPDX-License-Identifier: Apache-2.0
// Secrets from the environment are read once and scrubbed.
#include "server/auth/secret_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace collbench {
namespace {

TEST(SecretEnv, TakenOnceAndErased) {
  setenv("COLLBENCH_TEST_SECRET", "s-3f9a", 1);
  EXPECT_EQ(TakeSecretFromEnv("COLLBENCH_TEST_SECRET"), "s-3f9a");
  EXPECT_EQ(std::getenv("COLLBENCH_TEST_SECRET"), nullptr);
  for (char** entry = environ; *entry != nullptr; ++entry) {
    EXPECT_EQ(std::strstr(*entry, "s-3f9a"), nullptr) << *entry;
  }
  EXPECT_EQ(TakeSecretFromEnv("COLLBENCH_TEST_SECRET"), "");
  EXPECT_EQ(TakeSecretFromEnv("COLLBENCH_TEST_NEVER_SET"), "");
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// Secrets from the environment are read once and scrubbed; secret files
// readable by others are named; one-token files give their first line.
#include "common/secrets.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

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

class TokenFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text, mode_t mode) {
    char path[] = "/tmp/collbench-auth-test.XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << text;
    chmod(path, mode);
    paths_.push_back(path);
    return path;
  }
  ~TokenFileTest() override {
    for (const std::string& path : paths_) unlink(path.c_str());
  }
  std::vector<std::string> paths_;
};

TEST_F(TokenFileTest, SecretFilesReadableByOthersAreNamed) {
  EXPECT_TRUE(CheckPrivateFile(Write("read r\n", 0600)).ok());
  EXPECT_TRUE(CheckPrivateFile(Write("read r\n", 0400)).ok());
  const std::string open = Write("read r\n", 0644);
  const absl::Status warned = CheckPrivateFile(open);
  EXPECT_EQ(warned.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(warned.message().find(open), absl::string_view::npos) << warned;
  EXPECT_NE(warned.message().find("0644"), absl::string_view::npos) << warned;
  EXPECT_FALSE(CheckPrivateFile(Write("read r\n", 0604)).ok());
  // A group (a pod's fsGroup on a Secret volume) may read it.
  EXPECT_TRUE(CheckPrivateFile(Write("read r\n", 0640)).ok());
}

TEST_F(TokenFileTest, OneTokenFilesGiveTheirFirstLine) {
  EXPECT_EQ(*ReadTokenFile("join-token-file", Write("  w-123 \nignored\n", 0600)), "w-123");
  const absl::StatusOr<std::string> empty = ReadTokenFile("token-file", Write("\n", 0600));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("--token-file"), absl::string_view::npos);
  EXPECT_FALSE(ReadTokenFile("token-file", "/nonexistent/token").ok());
}

}  // namespace
}  // namespace collbench

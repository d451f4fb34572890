// SPDX-License-Identifier: Apache-2.0
// What the worker passes of its own environment to what it starts.
#include "worker/agent/clean_env.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "worker/agent/line_buffer.h"

namespace collbench {
namespace {

TEST(CleanEnvTest, OnlyTheAllowListPasses) {
  const char* const environ_entries[] = {
      "PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8", "LC_ALL=C", "LD_LIBRARY_PATH=/opt/lib",
      "CUDA_VISIBLE_DEVICES=0,1", "COLLBENCH_JOIN_TOKEN=join-secret",
      "COLLBENCH_RUN_TOKEN=run-secret", "LD_PRELOAD=/tmp/x.so", "OMPI_MCA_orte_fork_agent=/bin/sh",
      "NCCL_NET_PLUGIN=/tmp/x.so", "AWS_SECRET_ACCESS_KEY=k", "OMPI_ALLOW_RUN_AS_ROOT=1",
      "no-equals-sign", nullptr};
  const std::map<std::string, std::string> as_user =
      AllowedWorkerEnvironment(environ_entries, /*as_root=*/false);
  const std::map<std::string, std::string> expected = {
      {"PATH", "/usr/bin"},         {"HOME", "/root"},
      {"LANG", "C.UTF-8"},          {"LC_ALL", "C"},
      {"LD_LIBRARY_PATH", "/opt/lib"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};
  EXPECT_EQ(as_user, expected);
  const std::map<std::string, std::string> as_root =
      AllowedWorkerEnvironment(environ_entries, /*as_root=*/true);
  EXPECT_EQ(as_root.size(), expected.size() + 1);
  EXPECT_EQ(as_root.at("OMPI_ALLOW_RUN_AS_ROOT"), "1");
}

TEST(LineBufferTest, SplitsLinesAndKeepsThePartialOne) {
  LineBuffer buffer(8);
  EXPECT_EQ(buffer.Add("ab\ncd"), (std::vector<std::string>{"ab"}));
  EXPECT_EQ(buffer.Add("e\n\nf"), (std::vector<std::string>{"cde", ""}));
  EXPECT_EQ(buffer.buffered_bytes(), 1u);
  EXPECT_EQ(buffer.cut_lines(), 0);
}

TEST(LineBufferTest, CutsAnOverlongLineAndDropsItsRest) {
  LineBuffer buffer(4);
  EXPECT_EQ(buffer.Add("123"), std::vector<std::string>{});
  EXPECT_EQ(buffer.Add("456789"), (std::vector<std::string>{"1234"}));
  EXPECT_EQ(buffer.buffered_bytes(), 0u);
  EXPECT_EQ(buffer.Add(std::string(100, 'x')), std::vector<std::string>{});
  EXPECT_EQ(buffer.buffered_bytes(), 0u);
  EXPECT_EQ(buffer.Add("yy\nok\n"), (std::vector<std::string>{"ok"}));
  EXPECT_EQ(buffer.Add("abcdefgh\n"), (std::vector<std::string>{"abcd"}));
  EXPECT_EQ(buffer.Add("z\n"), (std::vector<std::string>{"z"}));
  EXPECT_EQ(buffer.cut_lines(), 2);
}

}  // namespace
}  // namespace collbench

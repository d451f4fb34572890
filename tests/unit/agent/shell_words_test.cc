// SPDX-License-Identifier: Apache-2.0
// The remote command's quoting undone without a shell, and everything a
// shell would interpret refused.
#include "worker/agent/shell_words.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SplitShellWordsTest, OpenMpiDaemonLaunchAsObserved) {
  // Open MPI 4.1's words after the host, as plm_rsh passes them.
  absl::StatusOr<std::vector<std::string>> argv = SplitRemoteCommand(
      {" orted", "-mca", "ess", "\"env\"", "-mca", "ess_base_vpid", "1", "-mca",
       "orte_node_regex", "\"vm,w[1:1]@0(2)\"", "-mca", "orte_hnp_uri",
       "\"1320222720.0;tcp://127.0.0.1:51943\"", "-mca", "plm_rsh_agent",
       "\"/usr/bin/collbench-worker launch-shim\"", "-mca", "pmix", "\"^s1,s2,cray,isolated\""});
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("orted", "-mca", "ess", "env", "-mca", "ess_base_vpid", "1",
                                 "-mca", "orte_node_regex", "vm,w[1:1]@0(2)", "-mca",
                                 "orte_hnp_uri", "1320222720.0;tcp://127.0.0.1:51943", "-mca",
                                 "plm_rsh_agent", "/usr/bin/collbench-worker launch-shim",
                                 "-mca", "pmix", "^s1,s2,cray,isolated"));
}

TEST(SplitShellWordsTest, HydraProxyLaunchAsObserved) {
  absl::StatusOr<std::vector<std::string>> argv = SplitRemoteCommand(
      {"\"/usr/bin/hydra_pmi_proxy\"", "--control-port", "127.0.0.1:45797", "--usize", "-2",
       "--proxy-id", "1"});
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("/usr/bin/hydra_pmi_proxy", "--control-port", "127.0.0.1:45797",
                                 "--usize", "-2", "--proxy-id", "1"));
}

TEST(SplitShellWordsTest, QuotingRules) {
  EXPECT_THAT(*SplitShellWords("a 'b c' \"d e\" f\\ g 'it'\\''s' \"q\\\"x\\\\y\\n\" ''"),
              ElementsAre("a", "b c", "d e", "f g", "it's", "q\"x\\y\\n", ""));
  EXPECT_THAT(*SplitShellWords("  \t "), ElementsAre());
  EXPECT_THAT(*SplitShellWords("'$(x);`y`|&<>'"), ElementsAre("$(x);`y`|&<>"));
  EXPECT_THAT(*SplitShellWords("\\$HOME \\;"), ElementsAre("$HOME", ";"));
}

TEST(SplitShellWordsTest, RefusesWhatNeedsAShellNamingTheWord) {
  for (const char* line :
       {"orted $(touch /tmp/p)", "orted `id`", "orted a;b", "orted a|b", "orted a&", "orted a&&b",
        "orted >f", "orted <f", "orted (x)", "orted $HOME", "orted \"$(id)\"", "orted \"`id`\"",
        "orted \"${X}\"", "orted *", "orted ?", "orted [ab]", "orted ~", "orted #c", "orted {a,b}",
        "orted !x", "orted a\nb", "orted a\\"}) {
    absl::StatusOr<std::vector<std::string>> argv = SplitShellWords(line);
    EXPECT_EQ(argv.status().code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(argv.status().message(), HasSubstr("remote command")) << line;
  }
  absl::StatusOr<std::vector<std::string>> argv = SplitShellWords("orted -mca x a;touch");
  EXPECT_THAT(argv.status().message(), HasSubstr("'a;touch'"));
  EXPECT_THAT(argv.status().message(), HasSubstr("';'"));
}

// As Open MPI 4.1 sends it when the user's login shell is /bin/sh (a
// container user): the .profile wrapper comes off, nothing else does.
TEST(SplitShellWordsTest, OpenMpiProfileWrapperIsTakenOff) {
  absl::StatusOr<std::vector<std::string>> argv = SplitRemoteCommand(
      {"(", "test", "!", "-r", "./.profile", "||", ".", "./.profile;", " orted", "-mca", "ess",
       "\"env\"", "-mca", "orte_hnp_uri", "\"1.0;tcp://198.18.20.11:40000\"", ")"});
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("orted", "-mca", "ess", "env", "-mca", "orte_hnp_uri",
                                 "1.0;tcp://198.18.20.11:40000"));
}

TEST(SplitShellWordsTest, OnlyTheExactProfileWrapperIsTakenOff) {
  // Anything else that merely looks like it still needs a shell.
  for (const char* line :
       {"( test ! -r ./.profile || . ./.profile; orted", "( orted -mca ess env )",
        "( test ! -r ./.profile || . ./evil; orted )",
        "( test ! -r ./.profile || . ./.profile; orted ) ; touch x",
        "( test ! -r ./.profile || . ./.profile; ( orted ) )"}) {
    EXPECT_FALSE(SplitShellWords(StripProfileWrapper(line)).ok()) << line;
  }
  EXPECT_EQ(StripProfileWrapper("orted -mca ess env"), "orted -mca ess env");
}

TEST(SplitShellWordsTest, RefusesUnterminatedQuotes) {
  EXPECT_EQ(SplitShellWords("orted 'abc").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitShellWords("orted \"abc").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collbench

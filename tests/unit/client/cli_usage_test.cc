// SPDX-License-Identifier: Apache-2.0
// The CLI's texts for people: `local`'s flags in every help that names
// them, and follow-up commands quoted so that they run as printed.
#include <string>
#include <vector>

#include "client/cli.h"
#include "client/follow_up.h"
#include "client/local_flags.h"
#include "common/flag_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::testing::Not;

TEST(LocalFlags, EveryAcceptedFlagIsInTheHelps) {
  FlagParser flags;
  LocalOptions options;
  AddLocalFlags(&flags, &options);
  ASSERT_THAT(flags.names(), IsSupersetOf({"workers", "slots", "store", "tuning-dir"}));
  const std::string top = CliUsage();
  const std::string local_entry = top.substr(top.find("  local "));
  for (const std::string& name : flags.names()) {
    EXPECT_THAT(flags.Usage(), HasSubstr("--" + name));
    EXPECT_THAT(flags.Synopsis(), HasSubstr("[--" + name));
    EXPECT_THAT(local_entry, HasSubstr("[--" + name)) << "collbench --help";
  }
}

TEST(LocalFlags, SynopsisNamesEachValue) {
  FlagParser flags;
  LocalOptions options;
  AddLocalFlags(&flags, &options);
  EXPECT_EQ(flags.Synopsis(), "[--workers K] [--slots N] [--store FILE] [--tuning-dir DIR]");
}

TEST(FollowUp, ReachesTheSameStoreQuotedForTheShell) {
  const FollowUp local("build/bin/collbench", {"local", "--store", "my runs.db"}, true);
  EXPECT_EQ(local.Line("again", {"suite", "show", "container-parity-20261126-221500"}),
            "again: build/bin/collbench local --store 'my runs.db' suite show "
            "container-parity-20261126-221500");
  const FollowUp remote("collbench", {"--coordinator", "10.0.0.5:50051", "--token-file", "op"},
                        true);
  EXPECT_EQ(remote.Command({"cancel", "runs/abc"}),
            "collbench --coordinator 10.0.0.5:50051 --token-file op cancel runs/abc");
}

TEST(FollowUp, RunsNotKeptGetANoteInsteadOfACommand) {
  const FollowUp local("collbench", {"local"}, false);
  const std::string line = local.Line("again", {"advise", "--sweep", "sweep-x"});
  EXPECT_THAT(line, HasSubstr("not kept"));
  EXPECT_THAT(line, HasSubstr("--store"));
  EXPECT_THAT(line, Not(HasSubstr("advise")));
}

// The lifecycle commands exist, list in `collbench --help`, answer their
// own --help without a coordinator, and refuse a call without a name.
TEST(LifecycleCommands, HelpWorksOfflineAndANameIsRequired) {
  const FollowUp follow_up("collbench", {"--coordinator", "127.0.0.1:1"}, true);
  const std::vector<std::vector<std::string>> commands = {
      {"drain"}, {"undrain"}, {"delete"}, {"workers", "delete"}};
  for (std::vector<std::string> command : commands) {
    std::vector<std::string> help = command;
    help.push_back("--help");
    EXPECT_EQ(RunCommand("127.0.0.1:1", "", help, follow_up), 0) << help[0];
    EXPECT_EQ(RunCommand("127.0.0.1:1", "", command, follow_up), 2) << command[0];
  }
  const std::string usage = CliUsage();
  EXPECT_THAT(usage, HasSubstr("drain WORKER... | undrain WORKER..."));
  EXPECT_THAT(usage, HasSubstr("delete RUN..."));
  EXPECT_THAT(usage, HasSubstr("workers delete WORKER..."));
}

TEST(ShellQuote, LeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(ShellQuote("runs/abc-1.db"), "runs/abc-1.db");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace collbench

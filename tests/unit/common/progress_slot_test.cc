// SPDX-License-Identifier: Apache-2.0
// Progress slots (docs/design/run-lifecycle.md#hang-attribution): what a rank writes is what
// its worker reads, from another process's view of the file; the folder of
// a run is only ever under the root; /proc tells a stopped process from a
// gone one.
#include "common/progress_slot.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace collbench {
namespace {

std::string TempDir() {
  char pattern[] = "/tmp/progress_slot_test.XXXXXX";
  return mkdtemp(pattern);
}

TEST(ProgressSlotTest, WhatARankWritesItsWorkerReads) {
  const std::string root = TempDir();
  const std::string dir = ProgressDirOf(root, "runs/20261128-abc");
  ASSERT_EQ(dir, root + "/20261128-abc");
  {
    std::unique_ptr<ProgressSlot> zero = ProgressSlot::Open(dir, 0, "allreduce");
    std::unique_ptr<ProgressSlot> one = ProgressSlot::Open(dir, 1, "allreduce");
    ASSERT_NE(zero, nullptr);
    ASSERT_NE(one, nullptr);
    zero->BeginSize(3, 65536, 1010);
    zero->Iteration(412);
    one->BeginSize(3, 65536, 1010);
    one->Iteration(413);
    one->SetPhase(RankPhase::kCheck);
    const std::vector<RankSlot> slots = ReadProgressSlots(dir);
    ASSERT_EQ(slots.size(), 2u);
    EXPECT_EQ(slots[0].rank, 0);
    EXPECT_EQ(slots[0].pid, getpid());
    EXPECT_EQ(slots[0].operation, "allreduce");
    EXPECT_EQ(slots[0].size_index, 3);
    EXPECT_EQ(slots[0].bytes, 65536u);
    EXPECT_EQ(slots[0].iteration, 412);
    EXPECT_EQ(slots[0].iterations, 1010);
    EXPECT_EQ(slots[0].phase, "measure");
    EXPECT_EQ(slots[1].iteration, 413);
    EXPECT_EQ(slots[1].phase, "check");
    char host[64] = {};
    gethostname(host, sizeof(host) - 1);
    EXPECT_EQ(slots[0].host, host);
    // A new size starts at iteration 0.
    zero->BeginSize(4, 131072, 1010);
    EXPECT_EQ(ReadProgressSlots(dir)[0].iteration, 0);
  }
  // The slots outlive the ranks (a stopped or killed rank is read after).
  EXPECT_EQ(ReadProgressSlots(dir).size(), 2u);
  RemoveProgressDir(dir);
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(ReadProgressSlots(dir).empty());
  std::filesystem::remove_all(root);
}

TEST(ProgressSlotTest, ARunsFolderStaysUnderTheRoot) {
  EXPECT_EQ(ProgressDirOf("/r", "runs/a.b-c_1"), "/r/a.b-c_1");
  EXPECT_EQ(ProgressDirOf("/r", "runs/../etc"), "");
  EXPECT_EQ(ProgressDirOf("/r", "runs/.."), "");
  EXPECT_EQ(ProgressDirOf("/r", "runs/a/b"), "");
  EXPECT_EQ(ProgressDirOf("/r", "runs/"), "");
  EXPECT_EQ(ProgressDirOf("", "runs/a"), "");
}

TEST(ProgressSlotTest, ProcTellsRunningStoppedAndGone) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    while (true) pause();
  }
  EXPECT_NE(ProcessFactsOf(child).state, "exited");
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  EXPECT_EQ(ProcessFactsOf(child).state, "stopped");
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(ProcessFactsOf(child).state, "exited");
  EXPECT_GE(ProcessFactsOf(getpid()).cpu_seconds, 0.0);
  EXPECT_EQ(ProcessFactsOf(0).state, "exited");
}

}  // namespace
}  // namespace collbench

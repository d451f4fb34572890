// SPDX-License-Identifier: Apache-2.0
// Progress slots (docs/design/run-lifecycle.md#hang-attribution): what a rank writes is what
// its worker reads, from another process's view of the file; the folder of
// a run is only ever under the root; /proc tells a stopped process from a
// gone one.
#include "common/progress_slot.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

// Each test's own folder, removed after it whether it passed or not.
class ProgressSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/progress_slot_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;  // a test may have left a folder it made unreadable
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& TempDir() const { return dir_; }

 private:
  std::string dir_;
};

TEST_F(ProgressSlotTest, WhatARankWritesItsWorkerReads) {
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
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The root is the worker's own: made 0700; an existing one is taken only
// as this user's real folder with no group or other permission.
TEST_F(ProgressSlotTest, TheRootIsPrivateOrRefusedNamingWhy) {
  const std::string base = TempDir();
  const std::string root = base + "/progress";
  ASSERT_TRUE(PrepareProgressRoot(root).ok());
  struct stat st;
  ASSERT_EQ(lstat(root.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_TRUE(PrepareProgressRoot(root).ok());  // again: it is ours

  ASSERT_EQ(chmod(root.c_str(), 0755), 0);
  absl::Status wide = PrepareProgressRoot(root);
  EXPECT_EQ(wide.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(wide.message()), HasSubstr("has mode 0755"));
  EXPECT_THAT(std::string(wide.message()), HasSubstr(root));

  const std::string link = base + "/link";
  ASSERT_EQ(chmod(root.c_str(), 0700), 0);
  ASSERT_EQ(symlink(root.c_str(), link.c_str()), 0);
  EXPECT_THAT(std::string(PrepareProgressRoot(link).message()), HasSubstr("symbolic link"));

  const std::string file = base + "/file";
  std::ofstream(file) << "x";
  EXPECT_THAT(std::string(PrepareProgressRoot(file).message()), HasSubstr("not a folder"));
  EXPECT_FALSE(PrepareProgressRoot(base + "/missing/progress").ok());  // no parent is made

  if (geteuid() == 0) {  // another user's folder (needs root to make one)
    const std::string foreign = base + "/foreign";
    ASSERT_EQ(mkdir(foreign.c_str(), 0700), 0);
    ASSERT_EQ(chown(foreign.c_str(), 65534, 65534), 0);
    EXPECT_THAT(std::string(PrepareProgressRoot(foreign).message()),
                HasSubstr("owned by uid 65534"));
    EXPECT_EQ(ProgressSlot::Open(foreign, 0, "allreduce"), nullptr);
  }
}

// A link planted where a rank's slot goes is removed, never written
// through: the file it points at keeps every byte.
TEST_F(ProgressSlotTest, ALinkPlantedAsASlotIsReplacedNotWrittenThrough) {
  const std::string base = TempDir();
  const std::string root = base + "/progress";
  ASSERT_TRUE(PrepareProgressRoot(root).ok());
  const std::string dir = ProgressDirOf(root, "runs/r1");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const std::string target = base + "/authorized_keys";
  std::ofstream(target) << "ssh-ed25519 AAAA keep-me\n";
  const std::string before = ReadAll(target);
  ASSERT_EQ(symlink(target.c_str(), (dir + "/rank-0").c_str()), 0);

  std::unique_ptr<ProgressSlot> slot = ProgressSlot::Open(dir, 0, "allreduce");
  ASSERT_NE(slot, nullptr);
  slot->BeginSize(0, 8, 10);
  EXPECT_EQ(ReadAll(target), before);
  struct stat st;
  ASSERT_EQ(lstat((dir + "/rank-0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  ASSERT_EQ(ReadProgressSlots(dir).size(), 1u);
}

// What is not a whole slot of this user's is skipped by the reader: a short
// file would raise SIGBUS once mapped (this process would die), a FIFO
// would block its open, a link could point anywhere.
TEST_F(ProgressSlotTest, TheReaderSkipsShortFilesFifosAndLinks) {
  const std::string base = TempDir();
  const std::string root = base + "/progress";
  ASSERT_TRUE(PrepareProgressRoot(root).ok());
  const std::string dir = ProgressDirOf(root, "runs/r2");
  std::unique_ptr<ProgressSlot> good = ProgressSlot::Open(dir, 0, "allreduce");
  ASSERT_NE(good, nullptr);
  good->BeginSize(1, 64, 10);
  std::ofstream(dir + "/rank-1");                          // 0 bytes
  std::ofstream(dir + "/rank-2") << std::string(100, 'x');  // short
  ASSERT_EQ(mkfifo((dir + "/rank-3").c_str(), 0600), 0);
  const std::string elsewhere = ProgressDirOf(root, "runs/r3");
  ASSERT_NE(ProgressSlot::Open(elsewhere, 4, "allreduce"), nullptr);  // a real slot...
  ASSERT_EQ(symlink((elsewhere + "/rank-4").c_str(), (dir + "/rank-4").c_str()), 0);  // ...linked

  const std::vector<RankSlot> slots = ReadProgressSlots(dir);
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0].rank, 0);
  EXPECT_EQ(slots[0].bytes, 64u);
}

// A run's folder open to others (or a link to one) is neither read nor
// written: another user could have planted anything in it.
TEST_F(ProgressSlotTest, ARunFolderThatIsNotPrivateIsNeitherReadNorWritten) {
  const std::string base = TempDir();
  const std::string root = base + "/progress";
  ASSERT_TRUE(PrepareProgressRoot(root).ok());
  const std::string dir = ProgressDirOf(root, "runs/r4");
  ASSERT_NE(ProgressSlot::Open(dir, 0, "allreduce"), nullptr);
  ASSERT_EQ(ReadProgressSlots(dir).size(), 1u);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  EXPECT_TRUE(ReadProgressSlots(dir).empty());
  EXPECT_EQ(ProgressSlot::Open(dir, 1, "allreduce"), nullptr);
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  const std::string link = root + "/r5";
  ASSERT_EQ(symlink(dir.c_str(), link.c_str()), 0);
  EXPECT_TRUE(ReadProgressSlots(link).empty());
  EXPECT_EQ(ProgressSlot::Open(link, 1, "allreduce"), nullptr);
  RemoveProgressDir(link);  // not followed: the real folder stays
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank-0"));
}

TEST_F(ProgressSlotTest, ARunsFolderStaysUnderTheRoot) {
  EXPECT_EQ(ProgressDirOf("/r", "runs/a.b-c_1"), "/r/a.b-c_1");
  EXPECT_EQ(ProgressDirOf("/r", "runs/../etc"), "");
  EXPECT_EQ(ProgressDirOf("/r", "runs/.."), "");
  EXPECT_EQ(ProgressDirOf("/r", "runs/a/b"), "");
  EXPECT_EQ(ProgressDirOf("/r", "runs/"), "");
  EXPECT_EQ(ProgressDirOf("", "runs/a"), "");
}

TEST_F(ProgressSlotTest, ProcTellsRunningStoppedAndGone) {
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

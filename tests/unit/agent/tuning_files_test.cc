// SPDX-License-Identifier: Apache-2.0
// Tuning files (worker/agent/tuning_files.h): a run names a file of the
// worker's --tuning-dir by its bare name; the launcher resolves it, and a
// peer's Exec accepts only a resolved path inside its own folder. Hostile
// names and links never reach a file outside.
#include "worker/agent/tuning_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

constexpr char kRulesKey[] = "OMPI_MCA_coll_tuned_dynamic_rules_filename";

// <tmp>/tune with rules.conf, a folder, and links inside pointing out;
// <tmp>/outside.conf and <tmp>/tune-evil/rules.conf beside it.
class TuningFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = absl::StrCat(::testing::TempDir(), "/collbench-tuning-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/tune";
    std::filesystem::create_directories(dir_ + "/sub");
    std::filesystem::create_directories(root_ + "/tune-evil");
    std::ofstream(dir_ + "/rules.conf") << "1\n";
    std::ofstream(root_ + "/outside.conf") << "1\n";
    std::ofstream(root_ + "/tune-evil/rules.conf") << "1\n";
    ASSERT_EQ(symlink((root_ + "/outside.conf").c_str(), (dir_ + "/escape.conf").c_str()), 0);
    ASSERT_EQ(symlink("/etc/passwd", (dir_ + "/passwd").c_str()), 0);
    ASSERT_EQ(symlink("rules.conf", (dir_ + "/alias.conf").c_str()), 0);  // stays inside
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string root_, dir_;
};

TEST_F(TuningFilesTest, ResolvesABareNameToItsRealPathInTheFolder) {
  absl::StatusOr<std::string> file = ResolveTuningFile(dir_, kRulesKey, "rules.conf");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file, std::filesystem::canonical(dir_ + "/rules.conf").string());
  // A link that stays inside the folder resolves to its target.
  file = ResolveTuningFile(dir_, kRulesKey, "alias.conf");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file, std::filesystem::canonical(dir_ + "/rules.conf").string());
}

TEST_F(TuningFilesTest, RefusesHostileNamesNamingTheKeyAndTheFile) {
  for (const char* name : {"../outside.conf", "/etc/passwd", ".hidden", "-rf", "", "..", ".",
                           "sub/x", "a b", "$(touch p)", "rules.conf\n"}) {
    absl::StatusOr<std::string> file = ResolveTuningFile(dir_, kRulesKey, name);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(file.status().message(), HasSubstr(kRulesKey)) << name;
    EXPECT_THAT(file.status().message(), HasSubstr("not a bare file name")) << name;
  }
}

TEST_F(TuningFilesTest, RefusesLinksOutFoldersAndMissingFiles) {
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"escape.conf", "outside the tuning folder"},
           {"passwd", "outside the tuning folder"},
           {"sub", "not a regular file"},
           {"missing.conf", "no such file"}}) {
    absl::StatusOr<std::string> file = ResolveTuningFile(dir_, kRulesKey, name);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition) << name;
    EXPECT_THAT(file.status().message(), HasSubstr(kRulesKey)) << name;
    EXPECT_THAT(file.status().message(), HasSubstr("'" + name + "'")) << name;
    EXPECT_THAT(file.status().message(), HasSubstr(why)) << name;
  }
}

TEST_F(TuningFilesTest, AWorkerWithoutATuningFolderSaysSo) {
  absl::StatusOr<std::string> file = ResolveTuningFile("", kRulesKey, "rules.conf");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(file.status().message(), HasSubstr(kRulesKey));
  EXPECT_THAT(file.status().message(), HasSubstr("'rules.conf'"));
  EXPECT_THAT(file.status().message(), HasSubstr("--tuning-dir"));
}

// Exec's side: the path a launcher resolved must be in this worker's folder.
TEST_F(TuningFilesTest, ExecAcceptsOnlyAResolvedPathInsideItsOwnFolder) {
  const std::string rules = std::filesystem::canonical(dir_ + "/rules.conf").string();
  EXPECT_TRUE(CheckResolvedTuningFile(dir_, kRulesKey, rules).ok());
  EXPECT_TRUE(CheckResolvedTuningFile(dir_, kRulesKey, dir_ + "/rules.conf").ok());
  for (const std::string& path :
       {root_ + "/outside.conf", dir_ + "/../outside.conf", dir_ + "/escape.conf",
        dir_ + "/passwd", std::string("/etc/passwd"), root_ + "/tune-evil/rules.conf",
        dir_ + "/sub", dir_ + "/missing.conf", dir_, std::string("rules.conf"),
        std::string("")}) {
    absl::Status status = CheckResolvedTuningFile(dir_, kRulesKey, path);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(status.message(), HasSubstr(kRulesKey)) << path;
  }
  // A worker without a folder accepts none.
  EXPECT_EQ(CheckResolvedTuningFile("", kRulesKey, rules).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TuningFilesTest, TheFolderFlagMustBeAFolder) {
  absl::StatusOr<std::string> dir = CanonicalTuningDir(dir_ + "/../tune");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, std::filesystem::canonical(dir_).string());
  EXPECT_FALSE(CanonicalTuningDir(dir_ + "/rules.conf").ok());
  EXPECT_FALSE(CanonicalTuningDir(root_ + "/missing").ok());
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The NCCL loader (worker/engine/nccl/nccl_library.h): where it looks, that
// a missing or wrong library gives one line naming what was searched or the
// missing symbol, and that an explicit COLLBENCH_NCCL_LIBRARY is never
// silently replaced. Cases that need a real NCCL use the toolkit's copy and
// are skipped where there is none.
#include "worker/engine/nccl/nccl_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

namespace fs = std::filesystem;

constexpr char kToolkitNccl[] = "/usr/local/cuda/lib64/libnccl.so.2";

// A shared library that is certainly not NCCL: the C library this test runs on.
std::string NonNcclLibrary() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&dlopen), &info), 0);
  return info.dli_fname;
}

bool OneLine(const absl::Status& status) { return !absl::StrContains(status.message(), "\n"); }

// A fresh directory under the test's temporary directory, removed after.
class NcclLibraryTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(testing::TempDir()) / ("nccl_library_test." + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // dir/nvidia/nccl/lib/libnccl.so.2 -> target, as the wheel lays it out.
  std::string WheelSiteDir(const std::string& name, const std::string& target) {
    const fs::path site = root_ / name;
    fs::create_directories(site / "nvidia/nccl/lib");
    fs::create_symlink(target, site / "nvidia/nccl/lib/libnccl.so.2");
    return site.string();
  }

  // A search that finds nothing on this machine unless a test adds to it.
  NcclSearch EmptySearch() {
    NcclSearch search;
    search.loader_names = {"libcollbench-absent-nccl.so.2"};
    search.directories = {(root_ / "lib64").string()};
    return search;
  }

  fs::path root_;
};

TEST_F(NcclLibraryTest, MissingLibraryIsOneLineNamingEveryPlaceSearched) {
  NcclSearch search = EmptySearch();
  const std::string site = (root_ / "site-packages").string();
  search.python_site_dirs = [&] { return std::vector<std::string>{site}; };
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_FALSE(loaded.ok());
  const absl::Status& status = loaded.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(OneLine(status)) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), "NCCL not found")) << status;
  for (const std::string& place :
       {std::string("$COLLBENCH_NCCL_LIBRARY"), std::string("libcollbench-absent-nccl.so.2"),
        (root_ / "lib64").string(), std::string("nvidia/nccl/lib/libnccl.so.2"), site}) {
    EXPECT_TRUE(absl::StrContains(status.message(), place)) << place << " in " << status;
  }
  EXPECT_FALSE(absl::StrContains(status.message(), "unusable")) << status;
}

TEST_F(NcclLibraryTest, WithoutPythonTheMessageSaysNoSitePackagesWereFound) {
  const auto loaded = NcclLibrary::Load(EmptySearch());
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "site-packages (none found)"))
      << loaded.status();
}

TEST_F(NcclLibraryTest, ExplicitNonNcclLibraryNamesTheMissingSymbol) {
  NcclSearch search = EmptySearch();
  search.explicit_library = NonNcclLibrary();
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_FALSE(loaded.ok());
  const absl::Status& status = loaded.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(OneLine(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "COLLBENCH_NCCL_LIBRARY=")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "has no symbol ncclGetVersion")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), search.explicit_library)) << status;
}

// The user's choice is final even when another NCCL would load.
TEST_F(NcclLibraryTest, ExplicitMissingFileIsAnErrorNotAFallback) {
  NcclSearch search = DefaultNcclSearch();
  search.explicit_library = (root_ / "no-such-libnccl.so.2").string();
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(OneLine(loaded.status()));
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), search.explicit_library))
      << loaded.status();
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "no such file")) << loaded.status();
}

TEST_F(NcclLibraryTest, LibraryWithoutTheEntryPointsIsPassedOverAndReported) {
  NcclSearch search = EmptySearch();
  const std::string site = WheelSiteDir("site-packages", NonNcclLibrary());
  search.python_site_dirs = [&] { return std::vector<std::string>{site}; };
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(OneLine(loaded.status()));
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "unusable:")) << loaded.status();
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "has no symbol ncclGetVersion"))
      << loaded.status();
}

TEST_F(NcclLibraryTest, DefaultSearchFollowsTheDocumentedOrder) {
  unsetenv("COLLBENCH_NCCL_LIBRARY");
  NcclSearch search = DefaultNcclSearch();
  EXPECT_TRUE(search.explicit_library.empty());
  EXPECT_EQ(search.loader_names, std::vector<std::string>{"libnccl.so.2"});
  EXPECT_EQ(search.directories, std::vector<std::string>{"/usr/local/cuda/lib64"});
  EXPECT_TRUE(static_cast<bool>(search.python_site_dirs));
  setenv("COLLBENCH_NCCL_LIBRARY", "/opt/nccl/libnccl.so.2", 1);
  EXPECT_EQ(DefaultNcclSearch().explicit_library, "/opt/nccl/libnccl.so.2");
  unsetenv("COLLBENCH_NCCL_LIBRARY");
}

TEST_F(NcclLibraryTest, PythonSiteDirsAreExistingPackageDirectories) {
  for (const std::string& dir : PythonSiteDirs()) {
    EXPECT_TRUE(fs::is_directory(dir)) << dir;
    EXPECT_TRUE(absl::EndsWith(dir, "site-packages") || absl::EndsWith(dir, "dist-packages"))
        << dir;
  }
}

// The layout PyTorch's nvidia-nccl wheel installs, found through python3's
// directories once everything before it failed.
TEST_F(NcclLibraryTest, FindsNcclInTheWheelLayout) {
  if (!fs::exists(kToolkitNccl)) GTEST_SKIP() << "no " << kToolkitNccl << " to stand in";
  NcclSearch search = EmptySearch();
  const std::string site = WheelSiteDir("dist-packages", kToolkitNccl);
  search.python_site_dirs = [&] { return std::vector<std::string>{site}; };
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->path(), site + "/nvidia/nccl/lib/libnccl.so.2");
  EXPECT_TRUE(absl::StartsWith((*loaded)->VersionText(), "NCCL 2.")) << (*loaded)->VersionText();
}

TEST_F(NcclLibraryTest, PythonIsNotAskedWhenAnEarlierCandidateLoads) {
  if (!fs::exists(kToolkitNccl)) GTEST_SKIP() << "no " << kToolkitNccl;
  NcclSearch search = EmptySearch();
  search.directories.push_back(fs::path(kToolkitNccl).parent_path().string());
  bool asked = false;
  search.python_site_dirs = [&] {
    asked = true;
    return std::vector<std::string>{};
  };
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(asked);
}

TEST_F(NcclLibraryTest, StatusOfNamesTheCallNcclsTextAndTheSite) {
  if (!fs::exists(kToolkitNccl)) GTEST_SKIP() << "no " << kToolkitNccl;
  NcclSearch search = EmptySearch();
  search.explicit_library = kToolkitNccl;
  const auto loaded = NcclLibrary::Load(search);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const NcclLibrary& nccl = **loaded;
  EXPECT_TRUE(nccl.StatusOf(ncclSuccess, "ncclGroupEnd()", "x.cc", 1).ok());
  const absl::Status failed = nccl.StatusOf(ncclInvalidArgument, "ncclAllReduce(a)", "x.cc", 7);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(failed.message(), "ncclAllReduce(a) failed: ")) << failed;
  EXPECT_TRUE(absl::EndsWith(failed.message(), "[x.cc:7]")) << failed;
  EXPECT_TRUE(OneLine(failed));
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// A fake file system tree in a temp folder, for the tests that read /proc,
// /sys and other absolute paths through a root prefix.
#ifndef COLLBENCH_TESTS_UNIT_AGENT_FAKE_TREE_H_
#define COLLBENCH_TESTS_UNIT_AGENT_FAKE_TREE_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace collbench::testing {

class FakeTree {
 public:
  FakeTree()
      : root_(std::filesystem::temp_directory_path() /
              ("collbench_tree_" + std::to_string(getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "proc/self/ns");
  }
  ~FakeTree() { std::filesystem::remove_all(root_); }

  // Writes `text` at `path` ("proc/self/cgroup"), making its folders.
  void Write(const std::string& path, const std::string& text) const {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  // A symbolic link at `path` whose text is `target` ("ipc:[4026532281]").
  void Link(const std::string& path, const std::string& target) const {
    std::filesystem::create_directories((root_ / path).parent_path());
    std::filesystem::create_symlink(target, root_ / path);
  }

  std::string root() const { return root_.string(); }
  std::string proc() const { return (root_ / "proc").string(); }

 private:
  std::filesystem::path root_;
};

}  // namespace collbench::testing

#endif  // COLLBENCH_TESTS_UNIT_AGENT_FAKE_TREE_H_

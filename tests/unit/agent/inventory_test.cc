// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/inventory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// An environment with only `values` set.
std::function<std::optional<std::string>(const std::string&)> FakeEnv(
    std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

void WriteFile(const fs::path& path, const std::string& text, bool executable = false) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  if (executable) chmod(path.c_str(), 0755);
}

std::string ReadBootId() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(file, id);
  return std::string(absl::StripAsciiWhitespace(id));
}

class InventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("collbench_inventory_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
};

TEST_F(InventoryTest, DescribesThisMachine) {
  InventoryOptions options;
  options.get_env = FakeEnv({{"PATH", "/usr/bin:/bin"}});
  absl::StatusOr<v1::Inventory> inventory = DiscoverInventory(options);
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  char hostname[256] = {};
  gethostname(hostname, sizeof(hostname) - 1);
  EXPECT_EQ(inventory->hostname(), hostname);
  EXPECT_EQ(inventory->host_id(), ReadBootId());
  EXPECT_GE(inventory->cpus(), 1);
  EXPECT_GT(inventory->memory_bytes(), 0u);
  EXPECT_THAT(inventory->memory_kinds(), Contains("default"));
  EXPECT_FALSE(inventory->kernel().empty());
  EXPECT_FALSE(inventory->collbench_version().empty());
  // The host backends run everywhere; the device ones only beside a GPU.
  if (inventory->gpus().empty()) {
    EXPECT_THAT(inventory->backends(), ElementsAre("mpi", "host-staged", "mpi-object"));
    EXPECT_THAT(inventory->memory_kinds(), ::testing::Not(Contains("device")));
  } else {
    EXPECT_THAT(inventory->backends(), Contains("nccl"));
  }
  for (const v1::NumaNode& node : inventory->numa_nodes()) {
    EXPECT_GT(node.memory_bytes(), 0u);
    EXPECT_FALSE(node.cpus().empty());
  }
}

TEST_F(InventoryTest, HostIdComesFromTheEnvironmentFirst) {
  InventoryOptions options;
  options.probe_gpus = false;
  options.get_env = FakeEnv({{"COLLBENCH_HOST_ID", "rack3-node7"}, {"NODE_NAME", "k8s-node"}});
  EXPECT_EQ(DiscoverInventory(options)->host_id(), "rack3-node7");
  options.get_env = FakeEnv({{"NODE_NAME", "k8s-node"}, {"KUBERNETES_NODE_NAME", "x"}});
  EXPECT_EQ(DiscoverInventory(options)->host_id(), "k8s-node");
  options.get_env = FakeEnv({{"KUBERNETES_NODE_NAME", "kn"}});
  EXPECT_EQ(DiscoverInventory(options)->host_id(), "kn");
}

TEST_F(InventoryTest, ReadsProcAndSysTrees) {
  WriteFile(root_ / "proc/sys/kernel/random/boot_id", "1234-abcd\n");
  WriteFile(root_ / "proc/meminfo", "MemTotal:       16384 kB\nMemFree: 1 kB\n");
  WriteFile(root_ / "proc/self/cgroup", "0::/kubepods/burstable/pod1/abc\n");
  WriteFile(root_ / "proc/self/mountinfo",
            "30 25 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
  WriteFile(root_ / "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       8192 kB\n");
  WriteFile(root_ / "sys/devices/system/node/node0/cpulist", "0-2,5\n");
  WriteFile(root_ / "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:       4096 kB\n");
  WriteFile(root_ / "sys/devices/system/node/node1/cpulist", "3\n");
  WriteFile(root_ / "sys/fs/cgroup/kubepods/burstable/pod1/abc/memory.max", "max\n");
  InventoryOptions options;
  options.root = root_.string();
  options.proc_root = (root_ / "proc").string();
  options.sys_root = (root_ / "sys").string();
  options.probe_gpus = false;
  options.get_env = FakeEnv({});
  absl::StatusOr<v1::Inventory> inventory = DiscoverInventory(options);
  ASSERT_TRUE(inventory.ok());
  EXPECT_EQ(inventory->host_id(), "1234-abcd");
  EXPECT_EQ(inventory->memory_bytes(), 16384u * 1024);
  EXPECT_TRUE(inventory->in_container());
  EXPECT_EQ(inventory->container_runtime(), "kubernetes");
  EXPECT_EQ(inventory->container().runtime(), "kubernetes");
  EXPECT_EQ(inventory->container().cgroup().path(), "/kubepods/burstable/pod1/abc");
  EXPECT_EQ(inventory->host_memory_bytes(), 16384u * 1024);
  EXPECT_EQ(inventory->cpus(), inventory->host_cpus());  // no CPU limit
  ASSERT_EQ(inventory->numa_nodes_size(), 2);
  EXPECT_EQ(inventory->numa_nodes(0).memory_bytes(), 8192u * 1024);
  EXPECT_THAT(inventory->numa_nodes(0).cpus(), ElementsAre(0, 1, 2, 5));
  EXPECT_EQ(inventory->numa_nodes(1).id(), 1);
  EXPECT_THAT(inventory->numa_nodes(1).cpus(), ElementsAre(3));

  // The cgroup's limits replace the host's figures, which are kept: a
  // memory limit below MemTotal, and half a CPU (one slot).
  WriteFile(root_ / "sys/fs/cgroup/kubepods/burstable/pod1/memory.max", "1048576\n");
  WriteFile(root_ / "sys/fs/cgroup/kubepods/burstable/pod1/abc/cpu.max", "50000 100000\n");
  inventory = DiscoverInventory(options);
  EXPECT_EQ(inventory->memory_bytes(), 1048576u);
  EXPECT_EQ(inventory->host_memory_bytes(), 16384u * 1024);
  EXPECT_EQ(inventory->container().cgroup().memory_limit_bytes(), 1048576u);
  EXPECT_EQ(inventory->cpus(), 1);
  EXPECT_GE(inventory->host_cpus(), 1);
  EXPECT_DOUBLE_EQ(inventory->container().cgroup().cpu_limit(), 0.5);
}

TEST_F(InventoryTest, KubernetesEnvironmentMeansContainer) {
  InventoryOptions options;
  options.probe_gpus = false;
  options.proc_root = (root_ / "proc").string();  // empty: no cgroup hints
  options.get_env = FakeEnv({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}});
  absl::StatusOr<v1::Inventory> inventory = DiscoverInventory(options);
  EXPECT_TRUE(inventory->in_container());
  EXPECT_EQ(inventory->container_runtime(), "kubernetes");
}

TEST_F(InventoryTest, MpiImplementationsNeedRankBinaryAndLauncher) {
  InventoryOptions options;
  options.probe_gpus = false;
  options.binary_dir = (root_ / "bin").string();
  options.search_path = (root_ / "path").string();
  options.get_env = FakeEnv({});
  fs::create_directories(root_ / "bin");
  EXPECT_THAT(DiscoverInventory(options)->mpi_implementations(), IsEmpty());

  WriteFile(root_ / "bin/collbench-rank", "#!/bin/sh\n", true);
  EXPECT_THAT(DiscoverInventory(options)->mpi_implementations(), IsEmpty());
  WriteFile(root_ / "path/mpirun.openmpi", "#!/bin/sh\n", true);
  EXPECT_THAT(DiscoverInventory(options)->mpi_implementations(), ElementsAre("openmpi"));

  // The rank binary may also come from the search path; it must be executable.
  WriteFile(root_ / "path/collbench-rank-mpich", "#!/bin/sh\n", false);
  WriteFile(root_ / "path/mpiexec.mpich", "#!/bin/sh\n", true);
  EXPECT_THAT(DiscoverInventory(options)->mpi_implementations(), ElementsAre("openmpi"));
  chmod((root_ / "path/collbench-rank-mpich").c_str(), 0755);
  EXPECT_THAT(DiscoverInventory(options)->mpi_implementations(), ElementsAre("openmpi", "mpich"));
}

}  // namespace
}  // namespace collbench

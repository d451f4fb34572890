// SPDX-License-Identifier: Apache-2.0
// cgroup CPU and memory limits (worker/agent/cgroup_limits.h) on fake /proc
// and /sys trees: v2 and v1, "max" and v1's unlimited, limits set on an
// ancestor of the worker's cgroup, and hierarchies mounted at a cgroup.
#include "worker/agent/cgroup_limits.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/unit/agent/fake_tree.h"

namespace collbench {
namespace {

constexpr char kV2Mount[] =
    "30 25 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr char kV1Mounts[] =
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
constexpr uint64_t kMiB = uint64_t{1} << 20;

v1::CgroupLimits Read(const testing::FakeTree& tree) {
  return ReadCgroupLimits(tree.root(), tree.proc());
}

TEST(CgroupLimitsTest, ParsesEachFile) {
  EXPECT_EQ(ParseCpuMax("250000 100000\n"), 2.5);
  EXPECT_EQ(ParseCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(ParseCpuMax("garbage"), std::nullopt);
  EXPECT_EQ(CpusOfQuota("50000\n", "100000\n"), 0.5);
  EXPECT_EQ(CpusOfQuota("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryMax("536870912\n"), 512 * kMiB);
  EXPECT_EQ(ParseMemoryMax("max\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryMax("9223372036854771712\n"), std::nullopt);  // v1 unlimited
}

TEST(CgroupLimitsTest, SlotsAreTheCpuLimitRoundedUpWithinTheHostCpus) {
  EXPECT_EQ(CappedCpus(8, 1.5), 2);
  EXPECT_EQ(CappedCpus(8, 2.0), 2);
  EXPECT_EQ(CappedCpus(8, 0.2), 1);
  EXPECT_EQ(CappedCpus(2, 4), 2);
  EXPECT_EQ(CappedCpus(8, 0), 8);  // no limit
}

TEST(CgroupLimitsTest, V2ContainerWithItsOwnCgroupNamespace) {
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup", "0::/\n");
  tree.Write("proc/self/mountinfo", kV2Mount);
  tree.Write("sys/fs/cgroup/cpu.max", "150000 100000\n");
  tree.Write("sys/fs/cgroup/memory.max", "536870912\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.version(), 2);
  EXPECT_EQ(limits.path(), "/");
  EXPECT_DOUBLE_EQ(limits.cpu_limit(), 1.5);
  EXPECT_EQ(limits.memory_limit_bytes(), 512 * kMiB);
}

TEST(CgroupLimitsTest, V2MaxMeansNoLimit) {
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup", "0::/\n");
  tree.Write("proc/self/mountinfo", kV2Mount);
  tree.Write("sys/fs/cgroup/cpu.max", "max 100000\n");
  tree.Write("sys/fs/cgroup/memory.max", "max\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.version(), 2);
  EXPECT_EQ(limits.cpu_limit(), 0);
  EXPECT_EQ(limits.memory_limit_bytes(), 0u);
}

TEST(CgroupLimitsTest, V2NestedPathTakesTheSmallestLimitOfItsAncestors) {
  testing::FakeTree tree;
  const std::string pod = "sys/fs/cgroup/kubepods/burstable/pod12";
  tree.Write("proc/self/cgroup", "0::/kubepods/burstable/pod12/ctr\n");
  tree.Write("proc/self/mountinfo", kV2Mount);
  tree.Write(pod + "/cpu.max", "100000 100000\n");  // the pod: 1 CPU
  tree.Write(pod + "/memory.max", "1073741824\n");  // the pod: 1 GiB
  tree.Write(pod + "/ctr/cpu.max", "200000 100000\n");
  tree.Write(pod + "/ctr/memory.max", "max\n");
  tree.Write("sys/fs/cgroup/kubepods/memory.max", "4294967296\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.path(), "/kubepods/burstable/pod12/ctr");
  EXPECT_DOUBLE_EQ(limits.cpu_limit(), 1.0);
  EXPECT_EQ(limits.memory_limit_bytes(), 1024 * kMiB);
}

TEST(CgroupLimitsTest, V1QuotaOverPeriodAndMemoryLimit) {
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup",
             "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n");
  tree.Write("proc/self/mountinfo", kV1Mounts);
  tree.Write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n");
  tree.Write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  tree.Write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "268435456\n");
  tree.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.version(), 1);
  EXPECT_EQ(limits.path(), "/docker/abc");
  EXPECT_DOUBLE_EQ(limits.cpu_limit(), 0.5);
  EXPECT_EQ(limits.memory_limit_bytes(), 256 * kMiB);
}

TEST(CgroupLimitsTest, V1UnlimitedIsNoLimit) {
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup", "4:memory:/\n3:cpu,cpuacct:/\n");
  tree.Write("proc/self/mountinfo", kV1Mounts);
  tree.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  tree.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  tree.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.version(), 1);
  EXPECT_EQ(limits.cpu_limit(), 0);
  EXPECT_EQ(limits.memory_limit_bytes(), 0u);
}

TEST(CgroupLimitsTest, V1HierarchyMountedAtTheContainersCgroup) {
  // Without a cgroup namespace the runtime bind-mounts the container's own
  // cgroup: mountinfo's root field is that path, and the files sit at the
  // mount point.
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n");
  tree.Write("proc/self/mountinfo",
             "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
             "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  tree.Write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "300000\n");
  tree.Write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  tree.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "134217728\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_DOUBLE_EQ(limits.cpu_limit(), 3.0);
  EXPECT_EQ(limits.memory_limit_bytes(), 128 * kMiB);
}

TEST(CgroupLimitsTest, HybridHostUsesTheV1Controllers) {
  // Controllers on v1, an empty v2 hierarchy beside them, and a cgroup
  // folder that does not exist in the mounted tree: no limit, version 1.
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup", "4:memory:/process_api/2d91\n1:cpu:/\n0::/\n");
  tree.Write(
      "proc/self/mountinfo",
      std::string(kV1Mounts) + "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  tree.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.version(), 1);
  EXPECT_EQ(limits.path(), "/process_api/2d91");
  EXPECT_EQ(limits.memory_limit_bytes(), 0u);
  EXPECT_EQ(limits.cpu_limit(), 0);
}

TEST(CgroupLimitsTest, NoCgroupFileSystemIsVersionZero) {
  testing::FakeTree tree;
  tree.Write("proc/self/cgroup", "0::/\n");
  tree.Write("proc/self/mountinfo", "27 1 254:0 / / rw - ext4 /dev/vda rw\n");
  const v1::CgroupLimits limits = Read(tree);
  EXPECT_EQ(limits.version(), 0);
  EXPECT_EQ(limits.memory_limit_bytes(), 0u);
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The oversubscription warning: more ranks on a host than CPUs they may run
// on (the union of their affinity sets) is named per host; ranks bound to
// distinct cores, or spread over hosts, are not.
#include <sched.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/engine/oversubscription.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

TEST(OversubscriptionTest, FourRanksOnTwoCpusAreNamed) {
  const std::string warning = OversubscriptionWarning(
      {"node-a", "node-a", "node-a", "node-a"}, {"0,1", "0,1", "0,1", "0,1"});
  EXPECT_THAT(warning, HasSubstr("4 ranks on node-a share 2 CPUs"));
  EXPECT_THAT(warning, HasSubstr("dominated by scheduling"));
}

TEST(OversubscriptionTest, AsManyRanksAsCpusIsFine) {
  EXPECT_EQ(OversubscriptionWarning({"node-a", "node-a"}, {"0,1", "0,1"}), "");
  // Bound to one core each, but distinct cores: the union counts.
  EXPECT_EQ(OversubscriptionWarning({"node-a", "node-a"}, {"0", "1"}), "");
  // Spread over hosts: each host has one rank.
  EXPECT_EQ(OversubscriptionWarning({"node-a", "node-b"}, {"0", "0"}), "");
}

TEST(OversubscriptionTest, RanksBoundToTheSameCoreAreNamed) {
  const std::string warning =
      OversubscriptionWarning({"node-a", "node-a", "node-b"}, {"3", "3", "0"});
  EXPECT_THAT(warning, HasSubstr("2 ranks on node-a share 1 CPU:"));
  EXPECT_THAT(warning, ::testing::Not(HasSubstr("node-b")));
}

TEST(OversubscriptionTest, AllowedCpusListsThisProcessesAffinity) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const std::string cpus = AllowedCpus();
  EXPECT_FALSE(cpus.empty());
  std::vector<std::string> one_rank_per_cpu(CPU_COUNT(&set), cpus);
  std::vector<std::string> hosts(one_rank_per_cpu.size(), "here");
  EXPECT_EQ(OversubscriptionWarning(hosts, one_rank_per_cpu), "");
  hosts.push_back("here");
  one_rank_per_cpu.push_back(cpus);
  EXPECT_THAT(OversubscriptionWarning(hosts, one_rank_per_cpu), HasSubstr("ranks on here"));
}

}  // namespace
}  // namespace collbench

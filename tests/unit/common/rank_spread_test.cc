// SPDX-License-Identifier: Apache-2.0
// Naming the slowest rank and flagging stragglers (common/rank_spread.h).
#include "common/rank_spread.h"

#include <vector>

#include "gtest/gtest.h"

namespace collbench {
namespace {

SizeRecord WithMeans(const std::vector<double>& means_s, int root = -1) {
  SizeRecord r;
  r.root = root;
  for (size_t i = 0; i < means_s.size(); ++i) {
    r.ranks.push_back({static_cast<int>(i), "h" + std::to_string(i), means_s[i], 0, 0, false});
  }
  return r;
}

std::vector<int> Stragglers(const SizeRecord& r) {
  std::vector<int> out;
  for (const RankTiming& t : r.ranks) {
    if (t.straggler) out.push_back(t.rank);
  }
  return out;
}

TEST(RankSpreadTest, NamesTheSlowestAgainstTheLowerMedianRank) {
  SizeRecord r = WithMeans({10e-6, 12e-6, 11e-6, 40e-6});
  AttributeRanks(&r);
  EXPECT_EQ(r.slowest_rank, 3);
  // Sorted means 10, 11, 12, 40: the median rank is the lower middle, 11.
  EXPECT_DOUBLE_EQ(r.slowest_vs_median, 40.0 / 11.0);
  EXPECT_EQ(Stragglers(r), std::vector<int>{3});
  EXPECT_EQ(SlowestRankText(r), "3@h3");
}

TEST(RankSpreadTest, TwoRanksCompareTheSlowerWithTheFaster) {
  SizeRecord r = WithMeans({3e-6, 2e-6});
  AttributeRanks(&r);
  EXPECT_EQ(r.slowest_rank, 0);
  EXPECT_DOUBLE_EQ(r.slowest_vs_median, 1.5);
  EXPECT_TRUE(Stragglers(r).empty());  // exactly at the threshold is not above it
  r.ranks[0].mean_s = 3.1e-6;
  AttributeRanks(&r);
  EXPECT_EQ(Stragglers(r), std::vector<int>{0});
}

TEST(RankSpreadTest, EvenRanksAreNotStragglers) {
  SizeRecord r = WithMeans({5e-6, 5.2e-6, 4.9e-6});
  AttributeRanks(&r);
  EXPECT_EQ(r.slowest_rank, 1);
  EXPECT_TRUE(Stragglers(r).empty());
}

TEST(RankSpreadTest, TheRootOfARootedOperationIsNamedButNeverFlagged) {
  SizeRecord r = WithMeans({90e-6, 10e-6, 11e-6, 35e-6}, /*root=*/0);
  AttributeRanks(&r);
  EXPECT_EQ(r.slowest_rank, 0);
  EXPECT_EQ(Stragglers(r), std::vector<int>{3});  // 35 > 1.5 x 11; the root is exempt
}

TEST(RankSpreadTest, NoRanksNamesNobody) {
  SizeRecord r;
  r.slowest_rank = 7;
  AttributeRanks(&r);
  EXPECT_EQ(r.slowest_rank, -1);
  EXPECT_EQ(r.slowest_vs_median, 0);
  EXPECT_EQ(SlowestRankText(r), "-");
}

}  // namespace
}  // namespace collbench

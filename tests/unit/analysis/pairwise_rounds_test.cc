// SPDX-License-Identifier: Apache-2.0
// The pairwise rounds (issue 23's plan): for N hosts, odd and even, with
// hosts holding several workers, every pair of distinct hosts exactly once,
// in N-1 (even) or N (odd) rounds of disjoint pairs.
#include "analysis/pairwise_rounds.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

// `hosts` hosts, host h holding `per_host` workers named w<h>-<k>.
std::vector<HostWorker> Fleet(int hosts, int per_host) {
  std::vector<HostWorker> workers;
  for (int k = per_host - 1; k >= 0; --k) {  // out of order on purpose
    for (int h = 0; h < hosts; ++h) {
      workers.push_back({absl::StrCat("workers/w", h, "-", k), absl::StrCat("host-", h)});
    }
  }
  return workers;
}

void ExpectTournament(int hosts, int per_host) {
  SCOPED_TRACE(absl::StrCat(hosts, " hosts of ", per_host, " workers"));
  const std::vector<HostWorker> workers = Fleet(hosts, per_host);
  std::map<std::string, std::string> host_of;
  for (const HostWorker& w : workers) host_of[w.name] = w.host;
  const std::vector<PairRound> rounds = PairwiseRounds(workers);
  EXPECT_EQ(rounds.size(), static_cast<size_t>(hosts % 2 == 0 ? hosts - 1 : hosts));
  std::set<std::pair<std::string, std::string>> seen;
  for (const PairRound& round : rounds) {
    std::set<std::string> busy;  // hosts in this round
    EXPECT_EQ(round.size(), static_cast<size_t>(hosts / 2));
    for (const WorkerPair& pair : round) {
      const std::string a = host_of.at(pair.a), b = host_of.at(pair.b);
      EXPECT_NE(a, b);
      EXPECT_TRUE(busy.insert(a).second) << a << " twice in a round";
      EXPECT_TRUE(busy.insert(b).second) << b << " twice in a round";
      EXPECT_TRUE(seen.insert({std::min(a, b), std::max(a, b)}).second)
          << a << "-" << b << " measured twice";
      // The host's first worker by name stands for it.
      EXPECT_EQ(pair.a.substr(pair.a.size() - 2), "-0");
      EXPECT_EQ(pair.b.substr(pair.b.size() - 2), "-0");
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(hosts * (hosts - 1) / 2));
}

TEST(PairwiseRoundsTest, EveryPairOfHostsOnceInDisjointRounds) {
  for (int hosts : {2, 3, 4, 5, 6, 7, 8, 9, 16, 33}) {
    for (int per_host : {1, 3}) ExpectTournament(hosts, per_host);
  }
}

TEST(PairwiseRoundsTest, OneHostIsNoPlan) {
  EXPECT_TRUE(PairwiseRounds(Fleet(1, 4)).empty());
  EXPECT_TRUE(PairwiseRounds({}).empty());
}

TEST(PairwiseRoundsTest, ThePlanDependsOnTheSetOfWorkersOnly) {
  std::vector<HostWorker> workers = Fleet(6, 2);
  const std::vector<PairRound> one = PairwiseRounds(workers);
  std::reverse(workers.begin(), workers.end());
  const std::vector<PairRound> two = PairwiseRounds(workers);
  ASSERT_EQ(one.size(), two.size());
  for (size_t r = 0; r < one.size(); ++r) {
    ASSERT_EQ(one[r].size(), two[r].size());
    for (size_t p = 0; p < one[r].size(); ++p) {
      EXPECT_EQ(one[r][p].a, two[r][p].a);
      EXPECT_EQ(one[r][p].b, two[r][p].b);
    }
  }
}

// Who stands for a host, and the hosts' order, follow the fleet's order
// (when the coordinator admitted each worker), not the names and host ids
// workers report; workers of unknown admission come after.
TEST(PairwiseRoundsTest, HostsAndTheirWorkersGoInTheFleetsOrder) {
  const std::vector<HostWorker> workers = {
      {"workers/0000-evil", "000", 30}, {"workers/b", "host-b", 10}, {"workers/c", "host-c", 20},
      {"workers/b2", "host-b", 5},      {"workers/00", "00", 0},     {"workers/a", "host-c", 40}};
  EXPECT_EQ(
      HostRepresentatives(workers),
      (std::vector<std::string>{"workers/b2", "workers/c", "workers/0000-evil", "workers/00"}));
  std::vector<HostWorker> reversed(workers.rbegin(), workers.rend());
  EXPECT_EQ(HostRepresentatives(reversed), HostRepresentatives(workers));
  // A pair's rank 0 is its worker earlier in that order.
  for (const PairRound& round : PairwiseRounds(workers)) {
    for (const WorkerPair& pair : round) EXPECT_NE(pair.a, "workers/00") << pair.b;
  }
  EXPECT_EQ(PairwiseRounds(workers).front().front().a, "workers/b2");
}

// One round at a time, as a hunt over thousands of hosts takes them: the
// rounds of 5,000 hosts without holding 12.5 million pairs.
TEST(PairwiseRoundsTest, APlanGivesOneRoundAtATime) {
  for (int hosts : {2, 5, 8, 101}) {
    const std::vector<HostWorker> workers = Fleet(hosts, 1);
    const PairwisePlan plan(workers);
    EXPECT_EQ(plan.rounds(), static_cast<size_t>(hosts % 2 == 0 ? hosts - 1 : hosts));
    EXPECT_EQ(plan.pairs(), static_cast<size_t>(hosts * (hosts - 1) / 2));
  }
  const PairwisePlan big(Fleet(5000, 1));
  ASSERT_EQ(big.rounds(), 4999u);
  EXPECT_EQ(big.pairs(), 12497500u);
  for (size_t r : {size_t{0}, size_t{1}, size_t{2500}, size_t{4998}}) {
    const PairRound round = big.Round(r);
    EXPECT_EQ(round.size(), 2500u);
    std::set<std::string> seen;
    for (const WorkerPair& p : round) {
      EXPECT_TRUE(seen.insert(p.a).second);
      EXPECT_TRUE(seen.insert(p.b).second);
    }
  }
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// A topology-aware hunt's passes (analysis/topology_pairs.h): within each
// rack, across racks, and two random matchings, each O(N) pairs, each host
// with distinct peers, in the fleet's order, whatever order the hosts come
// in; and at 10,000 hosts, the counts it prints grow with N, not N².
#include "analysis/topology_pairs.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/hunt_plan.h"
#include "gtest/gtest.h"
#include "tests/unit/analysis/racked_fleet.h"

namespace collbench {
namespace {

const TopologyPass* Pass(const std::vector<TopologyPass>& passes, const std::string& name,
                         int nth = 0) {
  for (const TopologyPass& pass : passes) {
    if (pass.name == name && nth-- == 0) return &pass;
  }
  return nullptr;
}

// Each worker's peers in `pass`.
std::map<std::string, std::vector<std::string>> PeersOf(const TopologyPass& pass) {
  std::map<std::string, std::vector<std::string>> peers;
  for (const WorkerPair& p : pass.pairs) {
    peers[p.a].push_back(p.b);
    peers[p.b].push_back(p.a);
  }
  return peers;
}

TEST(TopologyPairsTest, WithinEachRackARingAcrossRacksARingOfRacks) {
  const RackedFleet fleet = Racks(3, 4);
  const std::vector<TopologyPass> passes = TopologyPasses(fleet.workers, fleet.rack_of);
  ASSERT_EQ(passes.size(), 4u);
  const TopologyPass* within = Pass(passes, "within");
  const TopologyPass* across = Pass(passes, "across");
  ASSERT_NE(within, nullptr);
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(within->pairs.size(), 12u);  // a ring of 4 in each of 3 racks
  EXPECT_EQ(across->pairs.size(), 12u);  // each host to the next rack
  for (const WorkerPair& p : within->pairs) {
    EXPECT_EQ(fleet.worker_rack.at(p.a), fleet.worker_rack.at(p.b)) << p.a << " " << p.b;
  }
  for (const WorkerPair& p : across->pairs) {
    EXPECT_NE(fleet.worker_rack.at(p.a), fleet.worker_rack.at(p.b)) << p.a << " " << p.b;
  }
  // Every host: two peers of its rack, and one in each of the other racks.
  for (const TopologyPass* pass : {within, across}) {
    for (const auto& [worker, peers] : PeersOf(*pass)) {
      ASSERT_EQ(peers.size(), 2u) << pass->name << " " << worker;
      EXPECT_NE(peers[0], peers[1]) << pass->name << " " << worker;
      if (pass == across) {
        EXPECT_NE(fleet.worker_rack.at(peers[0]), fleet.worker_rack.at(peers[1])) << worker;
      }
    }
  }
}

TEST(TopologyPairsTest, RandomPassesAreMatchingsAcrossRacksThatDoNotRepeat) {
  const RackedFleet fleet = Racks(5, 7);  // 35 hosts: one sits each pass out
  const std::vector<TopologyPass> passes = TopologyPasses(fleet.workers, fleet.rack_of);
  const TopologyPass* one = Pass(passes, "random", 0);
  const TopologyPass* two = Pass(passes, "random", 1);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  std::set<std::pair<std::string, std::string>> first;
  for (const TopologyPass* pass : {one, two}) {
    EXPECT_EQ(pass->pairs.size(), 17u);
    std::set<std::string> used;
    for (const WorkerPair& p : pass->pairs) {
      EXPECT_TRUE(used.insert(p.a).second) << p.a;
      EXPECT_TRUE(used.insert(p.b).second) << p.b;
      EXPECT_NE(fleet.worker_rack.at(p.a), fleet.worker_rack.at(p.b)) << p.a << " " << p.b;
      if (pass == one) {
        first.insert({p.a, p.b});
      } else {
        EXPECT_EQ(first.count({p.a, p.b}), 0u) << p.a << " " << p.b;
      }
    }
  }
}

// The fleet's order, not the names or the order given: `a` is the pair's
// earlier admitted worker, and the plan does not change with the input's
// order.
TEST(TopologyPairsTest, ThePlanFollowsTheFleetsOrderNotTheInputsOrNames) {
  RackedFleet fleet = Racks(3, 3);
  std::map<std::string, int64_t> admitted;
  for (const HostWorker& w : fleet.workers) admitted[w.name] = w.admission_order;
  const std::vector<TopologyPass> forward = TopologyPasses(fleet.workers, fleet.rack_of);
  std::reverse(fleet.workers.begin(), fleet.workers.end());
  const std::vector<TopologyPass> backward = TopologyPasses(fleet.workers, fleet.rack_of);
  ASSERT_EQ(forward.size(), backward.size());
  for (size_t i = 0; i < forward.size(); ++i) {
    ASSERT_EQ(forward[i].pairs.size(), backward[i].pairs.size()) << forward[i].name;
    for (size_t j = 0; j < forward[i].pairs.size(); ++j) {
      EXPECT_EQ(forward[i].pairs[j].a, backward[i].pairs[j].a);
      EXPECT_EQ(forward[i].pairs[j].b, backward[i].pairs[j].b);
      EXPECT_LT(admitted[forward[i].pairs[j].a], admitted[forward[i].pairs[j].b]);
    }
  }
}

TEST(TopologyPairsTest, SmallAndUnknownTopologies) {
  // One host: nothing to pair.
  const std::map<std::string, std::string> one_rack_of = {{"a", std::string("rack-1")}};
  EXPECT_TRUE(TopologyPasses({HostWorker{"workers/a", "a", 1}}, one_rack_of).empty());
  // One rack: nothing across.
  const RackedFleet one_rack = Racks(1, 4);
  const std::vector<TopologyPass> in_one = TopologyPasses(one_rack.workers, one_rack.rack_of);
  EXPECT_EQ(Pass(in_one, "across"), nullptr);
  ASSERT_NE(Pass(in_one, "within"), nullptr);
  EXPECT_EQ(Pass(in_one, "within")->pairs.size(), 4u);
  // Two racks: the way back meets another peer, so each host has two.
  const RackedFleet two_racks = Racks(2, 3);
  const std::vector<TopologyPass> in_two = TopologyPasses(two_racks.workers, two_racks.rack_of);
  const TopologyPass* across = Pass(in_two, "across");
  ASSERT_NE(across, nullptr);
  EXPECT_EQ(across->pairs.size(), 6u);
  for (const auto& [worker, peers] : PeersOf(*across)) EXPECT_EQ(peers.size(), 2u) << worker;
  // No topology known: every host a rack of its own, nothing within, and a
  // ring across them all; co-resident workers are one host.
  const std::vector<HostWorker> unknown = {{"workers/a", "h1", 1},
                                           {"workers/b", "h2", 2},
                                           {"workers/b2", "h2", 3},
                                           {"workers/c", "h3", 4}};
  const std::vector<TopologyPass> plain = TopologyPasses(unknown, {});
  EXPECT_EQ(Pass(plain, "within"), nullptr);
  ASSERT_NE(Pass(plain, "across"), nullptr);
  EXPECT_EQ(Pass(plain, "across")->pairs.size(), 3u);
  for (const TopologyPass& pass : plain) {
    for (const WorkerPair& p : pass.pairs) {
      EXPECT_NE(p.a, "workers/b2");
      EXPECT_NE(p.b, "workers/b2");
    }
  }
}

// The scale: pairs per pass grow linearly with the fleet, and each
// pass packs into a few rounds of disjoint hosts whatever its size, where
// pairwise needs N(N-1)/2 pairs in N-1 rounds. Prints the counts.
TEST(TopologyPairsTest, PairsPerPassGrowLinearlyUpTo10000Hosts) {
  std::printf("%8s %8s %10s %10s %10s %10s %12s\n", "hosts", "racks", "within", "across", "random",
              "rounds", "pairwise");
  for (int hosts : {160, 1000, 10000}) {
    const RackedFleet fleet = Racks(hosts / 16 + (hosts % 16 ? 1 : 0), 16);
    std::vector<HostWorker> workers(fleet.workers.begin(), fleet.workers.begin() + hosts);
    const std::vector<TopologyPass> passes = TopologyPasses(workers, fleet.rack_of);
    size_t most_rounds = 0;
    std::map<std::string, size_t> pairs;
    for (const TopologyPass& pass : passes) {
      EXPECT_LE(pass.pairs.size(), static_cast<size_t>(hosts)) << pass.name;
      pairs[pass.name] += pass.pairs.size();
      std::vector<WorkerGroup> runs;
      for (const WorkerPair& p : pass.pairs) runs.push_back({p.a, p.b});
      most_rounds = std::max(most_rounds, PackRounds(runs, fleet.host_of).size());
    }
    EXPECT_EQ(pairs["within"], static_cast<size_t>(hosts));
    EXPECT_EQ(pairs["across"], static_cast<size_t>(hosts));
    EXPECT_EQ(pairs["random"], static_cast<size_t>(hosts / 2 * 2));
    EXPECT_LE(most_rounds, 4u);
    std::printf("%8d %8zu %10zu %10zu %10zu %10zu %12lld\n", hosts,
                static_cast<size_t>((hosts + 15) / 16), pairs["within"], pairs["across"],
                pairs["random"], most_rounds, static_cast<long long>(hosts) * (hosts - 1) / 2);
  }
}

}  // namespace
}  // namespace collbench

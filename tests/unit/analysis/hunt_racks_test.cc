// SPDX-License-Identifier: Apache-2.0
// Racks in a hunt's survey (analysis/hunt_racks.h): a topology hunt's
// passes over racked hosts, measured by a model of the fabric (a slow
// uplink, a bad node, a rack of bad nodes, a slow fabric everywhere),
// scored as the hunt scores them; the rack whose uplink is slow is named,
// and nothing else is.
#include "analysis/hunt_racks.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/hunt_localise.h"
#include "analysis/topology_pairs.h"
#include "gtest/gtest.h"
#include "tests/unit/analysis/racked_fleet.h"

namespace collbench {
namespace {

constexpr double kFast = 10e9;

// A fleet in racks (racked_fleet.h) and its faults: a rack whose uplink
// runs at `uplink` of the others', bad nodes at a third, and every run
// across racks at `across`.
struct Fabric : RackedFleet {
  std::string slow_rack;
  double uplink = 0.2;
  std::set<std::string> bad_nodes;
  double across = 1.0;

  double Bandwidth(const std::string& a, const std::string& b) const {
    double bw = kFast;
    if (bad_nodes.count(a) || bad_nodes.count(b)) bw /= 3;
    const std::string& ra = worker_rack.at(a);
    const std::string& rb = worker_rack.at(b);
    if (ra != rb) {
      bw *= across;
      if (ra == slow_rack || rb == slow_rack) bw *= uplink;
    }
    return bw;
  }
};

Fabric Fleet(int racks, int per_rack) {
  Fabric fabric;
  static_cast<RackedFleet&>(fabric) = Racks(racks, per_rack);
  return fabric;
}

// The passes measured (a run's bandwidth varies by up to 4% run to run,
// deterministically) and scored as a hunt scores its survey.
std::vector<v1::HuntMeasurement> Survey(const Fabric& fabric) {
  std::vector<v1::HuntMeasurement> survey;
  int n = 0;
  for (const TopologyPass& pass : TopologyPasses(fabric.workers, fabric.rack_of)) {
    for (const WorkerPair& pair : pass.pairs) {
      v1::HuntMeasurement m;
      m.add_workers(pair.a);
      m.add_workers(pair.b);
      m.set_phase(pass.name);
      m.set_run(absl::StrCat("runs/", ++n));
      m.set_busbw_bytes_per_s(fabric.Bandwidth(pair.a, pair.b) * (1 + 0.01 * (n % 5)));
      survey.push_back(m);
    }
  }
  ScoreSurvey(HuntThresholds(), fabric.host_of, &survey);
  return survey;
}

std::vector<v1::HuntSuspect> Racked(const Fabric& fabric,
                                    std::vector<v1::HuntMeasurement>* survey) {
  return FindSlowRacks(fabric.worker_rack, fabric.host_of, survey);
}

TEST(HuntRacksTest, ARackWithASlowUplinkIsNamedAndExplainsItsRunsAcross) {
  Fabric fabric = Fleet(3, 4);
  fabric.slow_rack = "rack-2";
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  const std::vector<v1::HuntSuspect> racks = Racked(fabric, &survey);
  ASSERT_EQ(racks.size(), 1u);
  EXPECT_EQ(racks[0].rack(), "rack-2");
  EXPECT_EQ(racks[0].verdict(), "RACK_SUSPECT");
  EXPECT_TRUE(racks[0].worker().empty());
  EXPECT_EQ(racks[0].peers_size(), 4);
  EXPECT_NEAR(racks[0].ratio(), 0.2, 0.02);
  EXPECT_NE(racks[0].evidence().find("its uplink or switch"), std::string::npos);
  int explained = 0;
  for (const v1::HuntMeasurement& m : survey) {
    const bool crosses = (fabric.worker_rack.at(m.workers(0)) == "rack-2") !=
                         (fabric.worker_rack.at(m.workers(1)) == "rack-2");
    EXPECT_EQ(m.explained_by(), crosses ? "racks/rack-2" : "") << m.ShortDebugString();
    explained += crosses ? 1 : 0;
  }
  EXPECT_GT(explained, 0);
  // With its runs across set aside, none of its workers is slow.
  for (const v1::HuntWorker& w : ScoreWorkers(survey, fabric.host_of)) {
    EXPECT_FALSE(SlowWorker(w, HuntThresholds())) << w.ShortDebugString();
  }
}

TEST(HuntRacksTest, ABadNodeInsideTheSlowRackNeitherHidesTheRackNorHidesInIt) {
  Fabric fabric = Fleet(3, 4);
  fabric.slow_rack = "rack-1";
  fabric.bad_nodes = {"workers/r1-h2"};
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  const std::vector<v1::HuntSuspect> racks = Racked(fabric, &survey);
  ASSERT_EQ(racks.size(), 1u);
  EXPECT_EQ(racks[0].rack(), "rack-1");
  // The node is still slow on its runs within the rack.
  const std::vector<v1::HuntWorker> workers = ScoreWorkers(survey, fabric.host_of);
  ASSERT_FALSE(workers.empty());
  EXPECT_EQ(workers[0].worker(), "workers/r1-h2");
  EXPECT_LT(workers[0].ratio(), 0.5);
}

TEST(HuntRacksTest, ARackOfBadNodesIsItsNodesNotARack) {
  Fabric fabric = Fleet(3, 3);
  fabric.bad_nodes = {"workers/r0-h0", "workers/r0-h1", "workers/r0-h2"};
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  EXPECT_TRUE(Racked(fabric, &survey).empty());
  for (const v1::HuntMeasurement& m : survey) EXPECT_EQ(m.explained_by(), "");
}

TEST(HuntRacksTest, ABadNodeInAFineRackNamesNoRack) {
  Fabric fabric = Fleet(4, 3);
  fabric.bad_nodes = {"workers/r2-h1"};
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  EXPECT_TRUE(Racked(fabric, &survey).empty());
}

TEST(HuntRacksTest, AFabricSlowBetweenEveryRackIsNoOneRacksFault) {
  Fabric fabric = Fleet(4, 3);
  fabric.across = 0.3;  // every run across racks, whichever racks
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  EXPECT_TRUE(Racked(fabric, &survey).empty());
}

TEST(HuntRacksTest, TwoRacksSlowToEachOtherAreBothNamedAndSaySoOfThemselves) {
  Fabric fabric = Fleet(2, 4);
  fabric.slow_rack = "rack-1";
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  const std::vector<v1::HuntSuspect> racks = Racked(fabric, &survey);
  ASSERT_EQ(racks.size(), 2u);
  for (const v1::HuntSuspect& s : racks) {
    EXPECT_NE(s.evidence().find("a third rack would tell"), std::string::npos) << s.evidence();
  }
}

TEST(HuntRacksTest, HostsOfUnknownRackAreNoRack) {
  Fabric fabric = Fleet(3, 3);
  // rack-0's hosts carry no rack (each is a rack of its own) and are slow
  // with everyone: no rack is named for them, nor for the racks they meet.
  for (auto& [worker, rack] : fabric.worker_rack) {
    if (rack == "rack-0") {
      rack.clear();
      fabric.bad_nodes.insert(worker);
    }
  }
  for (auto& [host, rack] : fabric.rack_of) {
    if (rack == "rack-0") rack.clear();
  }
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  EXPECT_TRUE(Racked(fabric, &survey).empty());
}

// The survey's reference for a topology hunt is the pairs within racks:
// with two racks and one slow uplink, every run across is slow, more than
// half of all; judged against all of them, none would be.
TEST(HuntRacksTest, TheRunsWithinRacksSetTheScale) {
  Fabric fabric = Fleet(2, 4);
  fabric.slow_rack = "rack-0";
  std::vector<v1::HuntMeasurement> survey = Survey(fabric);
  int across = 0, slow_across = 0;
  for (const v1::HuntMeasurement& m : survey) {
    if (fabric.worker_rack.at(m.workers(0)) == fabric.worker_rack.at(m.workers(1))) {
      EXPECT_FALSE(m.slow());
      EXPECT_NEAR(m.ratio(), 1.0, 0.05);
    } else {
      ++across;
      slow_across += m.slow() ? 1 : 0;
    }
  }
  EXPECT_GT(2 * across, static_cast<int>(survey.size()));
  EXPECT_EQ(slow_across, across);
}

}  // namespace
}  // namespace collbench

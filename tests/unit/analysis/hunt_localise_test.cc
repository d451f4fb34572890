// SPDX-License-Identifier: Apache-2.0
// Hunts' localisation and planning (docs/design/workflows.md#hunts): a simulated fleet whose
// pairs measure what a model says (one slow node, one slow link, or none,
// with noise), run through the survey, the re-test plan and the verdicts.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/hunt_localise.h"
#include "analysis/hunt_plan.h"
#include "analysis/pairwise_rounds.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using Model = std::function<double(const std::string&, const std::string&)>;

std::string W(int i) { return "workers/w" + std::to_string(i); }

struct Fleet {
  std::vector<HostWorker> workers;
  std::map<std::string, std::string> host_of;
};

Fleet MakeFleet(int hosts) {
  Fleet fleet;
  for (int i = 0; i < hosts; ++i) {
    fleet.workers.push_back({W(i), "host-" + std::to_string(i)});
    fleet.host_of[W(i)] = "host-" + std::to_string(i);
  }
  return fleet;
}

// 10 GB/s between healthy ends, times `noise` in [1 - noise, 1 + noise].
Model Healthy(double noise, unsigned seed) {
  auto engine = std::make_shared<std::mt19937>(seed);
  return [engine, noise](const std::string&, const std::string&) {
    std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
    return 10e9 * jitter(*engine);
  };
}

Model SlowNode(Model base, std::string bad, double factor) {
  return [=](const std::string& a, const std::string& b) {
    return base(a, b) * ((a == bad || b == bad) ? factor : 1.0);
  };
}

Model SlowLink(Model base, std::string x, std::string y, double factor) {
  return [=](const std::string& a, const std::string& b) {
    const bool link = (a == x && b == y) || (a == y && b == x);
    return base(a, b) * (link ? factor : 1.0);
  };
}

v1::HuntMeasurement Measure(const Model& model, const WorkerGroup& pair, const std::string& phase,
                            int* run) {
  v1::HuntMeasurement m;
  for (const std::string& w : pair) m.add_workers(w);
  m.set_phase(phase);
  m.set_run("runs/r" + std::to_string((*run)++));
  m.set_busbw_bytes_per_s(model(pair[0], pair[1]));
  return m;
}

struct Hunt {
  std::vector<v1::HuntMeasurement> survey;
  std::vector<v1::HuntMeasurement> retests;
  std::vector<v1::HuntWorker> workers;
  HuntFindings findings;
  std::vector<v1::HuntSuspect> suspects;
};

Hunt RunHunt(const Fleet& fleet, const Model& model) {
  Hunt hunt;
  int run = 0;
  for (const PairRound& round : PairwiseRounds(fleet.workers)) {
    for (const WorkerPair& pair : round) {
      hunt.survey.push_back(Measure(model, {pair.a, pair.b}, "pairwise", &run));
    }
  }
  const HuntThresholds thresholds;
  SurveyScore score = ScoreSurvey(thresholds, fleet.host_of, &hunt.survey);
  hunt.findings = Localise(hunt.survey, score.workers, {}, thresholds);
  // As the hunt does: each slow link measured once more, the better run
  // standing for the pair, and the survey scored again.
  if (!hunt.findings.slow_links.empty()) {
    for (v1::HuntMeasurement& m : hunt.survey) {
      const std::pair<std::string, std::string> key(std::min(m.workers(0), m.workers(1)),
                                                    std::max(m.workers(0), m.workers(1)));
      if (std::count(hunt.findings.slow_links.begin(), hunt.findings.slow_links.end(), key)) {
        m.set_busbw_bytes_per_s(
            std::max(m.busbw_bytes_per_s(), model(m.workers(0), m.workers(1))));
      }
    }
    score = ScoreSurvey(thresholds, fleet.host_of, &hunt.survey);
    hunt.findings = Localise(hunt.survey, score.workers, {}, thresholds);
  }
  hunt.workers = score.workers;
  for (const WorkerGroup& pair : RetestRuns(hunt.findings, fleet.host_of, 3)) {
    hunt.retests.push_back(Measure(model, pair, "retest", &run));
    ScoreMeasurement(score.centres.at("pairwise"), thresholds, &hunt.retests.back());
  }
  hunt.suspects = Classify(hunt.findings, hunt.survey, hunt.retests, hunt.workers);
  return hunt;
}

TEST(HuntLocaliseTest, RobustCentreIgnoresTheOutlierAMeanWouldFollow) {
  const RobustCentre centre = RobustCentreOf({10, 10.2, 9.8, 10.1, 9.9, 0.5});
  EXPECT_NEAR(centre.median, 9.95, 1e-9);
  EXPECT_LT(centre.spread, 0.05);  // in log units: the five even values set it
  EXPECT_LT(RobustZ(0.5, centre), -20);
  // An even fleet: the spread is floored at 2%.
  const RobustCentre even = RobustCentreOf({5, 5, 5, 5});
  EXPECT_NEAR(even.spread, 0.02, 1e-12);
  // Factors, not differences: a fifth of the median is as far out as five
  // times it.
  const RobustCentre noisy = RobustCentreOf({100, 80, 125, 110, 90, 120, 85});
  EXPECT_NEAR(RobustZ(100.0 / 5, noisy), -RobustZ(100.0 * 5, noisy), 1e-9);
  EXPECT_EQ(RobustCentreOf({}).count, 0);
}

TEST(HuntLocaliseTest, ASlowNodeStandsOutOfANoisyFleet) {
  // Healthy pairs vary by +-40% (contended CPUs), the bad node's pairs are
  // five times slower: a spread on the bandwidths themselves would call it
  // less than two deviations out; on their logarithms it stands out.
  const Fleet fleet = MakeFleet(6);
  const Hunt hunt = RunHunt(fleet, SlowNode(Healthy(0.4, 11), W(3), 0.2));
  ASSERT_EQ(hunt.suspects.size(), 1u);
  EXPECT_EQ(hunt.suspects[0].worker(), W(3));
  EXPECT_EQ(hunt.suspects[0].verdict(), "CONFIRMED_BAD") << hunt.suspects[0].evidence();
}

// A pairwise survey of six healthy netns hosts on the same machine (MB/s at
// 64 KiB): h4 drew three contended runs of five (0.50 to 0.56 of the
// median) while the other workers' medians bunch near 1, so its median is
// well out among the workers'; but none of those runs stands out on its
// own, and a bad node is slow with (nearly) every peer: h4 is not slow.
TEST(HuntLocaliseTest, AWorkerWithAFewContendedRunsIsNotSlow) {
  const std::vector<std::pair<std::vector<int>, double>> runs = {
      {{1, 6}, 300.5}, {{2, 5}, 209.2}, {{3, 4}, 206.5}, {{1, 5}, 209.2}, {{4, 6}, 284.4},
      {{2, 3}, 162.4}, {{1, 4}, 104.6}, {{3, 5}, 270.0}, {{2, 6}, 150.2}, {{1, 3}, 196.3},
      {{2, 4}, 110.3}, {{5, 6}, 116.8}, {{1, 2}, 206.5}, {{3, 6}, 233.6}, {{4, 5}, 116.8}};
  std::map<std::string, std::string> host_of;
  for (int h = 1; h <= 6; ++h) host_of[W(h)] = "h" + std::to_string(h);
  std::vector<v1::HuntMeasurement> survey;
  for (const auto& [workers, mb] : runs) {
    v1::HuntMeasurement m;
    for (const int w : workers) m.add_workers(W(w));
    m.set_phase("pairwise");
    m.set_busbw_bytes_per_s(mb * 1e6);
    survey.push_back(m);
  }
  const HuntThresholds thresholds;
  const SurveyScore score = ScoreSurvey(thresholds, host_of, &survey);
  const HuntFindings findings = Localise(survey, score.workers, {}, thresholds);
  EXPECT_TRUE(findings.slow_workers.empty()) << findings.slow_workers[0];
  EXPECT_TRUE(findings.slow_links.empty());
}

TEST(HuntLocaliseTest, ASlowNodeIsConfirmedBadAndNothingElseIs) {
  for (int hosts : {5, 6, 9, 32}) {
    const Fleet fleet = MakeFleet(hosts);
    const Hunt hunt = RunHunt(fleet, SlowNode(Healthy(0.05, hosts), W(2), 0.3));
    ASSERT_EQ(hunt.suspects.size(), 1u) << hosts << " hosts";
    EXPECT_EQ(hunt.suspects[0].worker(), W(2));
    EXPECT_EQ(hunt.suspects[0].verdict(), "CONFIRMED_BAD");
    EXPECT_NEAR(hunt.suspects[0].ratio(), 0.3, 0.05);
    EXPECT_LT(hunt.suspects[0].z(), -3);
    // The evidence: its slow survey runs and its re-tests with healthy peers.
    EXPECT_GE(hunt.suspects[0].runs_size(), (hosts - 1) + std::min(3, hosts - 1));
    EXPECT_TRUE(hunt.findings.slow_links.empty());
  }
}

// A compromised worker reports what it likes for the runs it takes part in
// (it may host their rank 0, whose output is the result), and nothing for
// the others. Whatever it reports, no healthy worker is confirmed bad (and
// so quarantined): a worker's verdict rests on its runs with many peers,
// and its re-tests are with healthy peers, never with the liar.
TEST(HuntLocaliseTest, ALyingWorkerCannotGetAHealthyOneConfirmedBad) {
  const std::string liar = W(1), target = W(4);
  auto in = [](const std::string& w, const std::string& a, const std::string& b) {
    return a == w || b == w;
  };
  const std::vector<std::pair<std::string, std::function<double(const std::string&,
                                                                 const std::string&)>>>
      lies = {
          {"frames the target", [&](const std::string& a, const std::string& b) {
             return in(liar, a, b) && in(target, a, b) ? 0.2 : 1.0;
           }},
          {"slow with everyone", [&](const std::string& a, const std::string& b) {
             return in(liar, a, b) ? 0.3 : 1.0;
           }},
          {"fast itself, the target slow", [&](const std::string& a, const std::string& b) {
             if (!in(liar, a, b)) return 1.0;
             return in(target, a, b) ? 0.1 : 1.5;
           }},
      };
  for (const auto& lie_case : lies) {
    // Named, not bound: a lambda cannot capture a structured binding in C++17.
    const std::string& what = lie_case.first;
    const auto& lie = lie_case.second;
    for (int hosts : {6, 9, 16}) {
      const Fleet fleet = MakeFleet(hosts);
      const Model honest = Healthy(0.05, hosts);
      const Hunt hunt = RunHunt(fleet, [&](const std::string& a, const std::string& b) {
        return honest(a, b) * lie(a, b);
      });
      int confirmed_liar = 0;
      for (const v1::HuntSuspect& s : hunt.suspects) {
        if (s.verdict() == "CONFIRMED_BAD") {
          EXPECT_EQ(s.worker(), liar) << what << ", " << hosts << " hosts";
          confirmed_liar += s.worker() == liar;
        }
      }
      // Slow with everyone, it is what it says it is: a bad node.
      if (what == std::string("slow with everyone")) {
        EXPECT_EQ(confirmed_liar, 1) << hosts << " hosts";
      }
      // The liar is in a re-test only as what is re-tested (a slow worker,
      // or an end of a slow link), never as the healthy peer of another.
      bool liar_suspected = std::count(hunt.findings.slow_workers.begin(),
                                       hunt.findings.slow_workers.end(), liar) > 0;
      for (const auto& [a, b] : hunt.findings.slow_links) liar_suspected |= a == liar || b == liar;
      for (const v1::HuntMeasurement& m : hunt.retests) {
        if (std::count(m.workers().begin(), m.workers().end(), liar) == 0) continue;
        EXPECT_TRUE(liar_suspected)
            << what << ", " << hosts << " hosts: a re-test with the liar as a healthy peer";
      }
    }
  }
}

TEST(HuntLocaliseTest, ASlowLinkIsALinkSuspectNamingThePairAndNoNodeIsBad) {
  const Fleet fleet = MakeFleet(6);
  const Hunt hunt = RunHunt(fleet, SlowLink(Healthy(0.05, 7), W(1), W(4), 0.2));
  ASSERT_EQ(hunt.suspects.size(), 1u);
  const v1::HuntSuspect& s = hunt.suspects[0];
  EXPECT_EQ(s.verdict(), "LINK_SUSPECT");
  std::set<std::string> pair = {s.worker()};
  for (const std::string& peer : s.peers()) pair.insert(peer);
  EXPECT_EQ(pair, (std::set<std::string>{W(1), W(4)}));
  EXPECT_TRUE(hunt.findings.slow_workers.empty());
}

TEST(HuntLocaliseTest, ANodeSlowOnlyWithSomePeersIsALinkSuspect) {
  // w0 is slow with w3 and w5 only (two bad cables on one node): the survey
  // sees it as two slow links.
  const Fleet fleet = MakeFleet(8);
  const Hunt hunt =
      RunHunt(fleet, SlowLink(SlowLink(Healthy(0.03, 3), W(0), W(3), 0.2), W(0), W(5), 0.2));
  ASSERT_EQ(hunt.suspects.size(), 2u);
  for (const v1::HuntSuspect& s : hunt.suspects) EXPECT_EQ(s.verdict(), "LINK_SUSPECT");
}

// Healthy fleets of 6 to 25 hosts: at +-15% noise no suspect in 50; at
// +-50% on every run (no node slow, but single runs anywhere from half to
// one and a half times the median) at most 1 of 50 fleets shows one, as
// measured when the rules were set.
TEST(HuntLocaliseTest, ANoisyHealthyFleetHasNoSuspect) {
  for (const auto& [noise, allowed] : std::vector<std::pair<double, int>>{{0.15, 0}, {0.5, 1}}) {
    int with_suspects = 0;
    for (unsigned seed = 1; seed <= 50; ++seed) {
      const Fleet fleet = MakeFleet(6 + seed % 20);
      const Hunt hunt = RunHunt(fleet, Healthy(noise, seed));
      with_suspects += !hunt.suspects.empty();
    }
    EXPECT_LE(with_suspects, allowed) << "noise " << noise << ": " << with_suspects << " of 50";
  }
}

TEST(HuntLocaliseTest, ASlownessThatDoesNotReproduceIsInconclusive) {
  // Slow in the survey only: the re-test measures it healthy.
  const Fleet fleet = MakeFleet(6);
  Hunt hunt;
  int run = 0;
  const Model survey_model = SlowNode(Healthy(0.02, 5), W(3), 0.3);
  const Model retest_model = Healthy(0.02, 6);
  for (const PairRound& round : PairwiseRounds(fleet.workers)) {
    for (const WorkerPair& pair : round) {
      hunt.survey.push_back(Measure(survey_model, {pair.a, pair.b}, "pairwise", &run));
    }
  }
  const HuntThresholds thresholds;
  const SurveyScore score = ScoreSurvey(thresholds, fleet.host_of, &hunt.survey);
  hunt.workers = score.workers;
  hunt.findings = Localise(hunt.survey, hunt.workers, {}, thresholds);
  for (const WorkerGroup& pair : RetestRuns(hunt.findings, fleet.host_of, 3)) {
    hunt.retests.push_back(Measure(retest_model, pair, "retest", &run));
    ScoreMeasurement(score.centres.at("pairwise"), thresholds, &hunt.retests.back());
  }
  hunt.suspects = Classify(hunt.findings, hunt.survey, hunt.retests, hunt.workers);
  ASSERT_EQ(hunt.suspects.size(), 1u);
  EXPECT_EQ(hunt.suspects[0].worker(), W(3));
  EXPECT_EQ(hunt.suspects[0].verdict(), "INCONCLUSIVE");
}

TEST(HuntLocaliseTest, AFailedRunIsNeitherScoredNorSlow) {
  v1::HuntMeasurement failed;
  failed.add_workers(W(0));
  failed.add_workers(W(1));
  failed.set_phase("pairwise");
  failed.set_error("exited 1");
  RobustCentre reference;
  reference.median = 1e9;
  reference.spread = 1e7;
  ScoreMeasurement(reference, HuntThresholds{}, &failed);
  EXPECT_FALSE(failed.slow());
  EXPECT_EQ(failed.ratio(), 0);
}

TEST(HuntLocaliseTest, RetestsPairEverySlowWorkerWithHealthyPeersOnOtherHosts) {
  Fleet fleet = MakeFleet(5);
  fleet.host_of[W(9)] = fleet.host_of[W(2)];  // a second worker on w2's host
  HuntFindings findings;
  findings.slow_workers = {W(2)};
  findings.healthy = {W(9), W(0), W(1), W(3)};
  const std::vector<WorkerGroup> runs = RetestRuns(findings, fleet.host_of, 2);
  ASSERT_GE(runs.size(), 2u);
  EXPECT_EQ(runs[0], (WorkerGroup{W(2), W(0)}));  // w9 shares its host: skipped
  EXPECT_EQ(runs[1], (WorkerGroup{W(2), W(1)}));
}

TEST(HuntPlanTest, GroupDealsAreDisjointAndChangePartners) {
  std::vector<HostWorker> workers;
  for (int i = 0; i < 16; ++i) workers.push_back({W(i), "host-" + std::to_string(i)});
  const auto deals = GroupDeals(workers, 4, 3);
  ASSERT_EQ(deals.size(), 3u);
  std::set<std::set<std::string>> groups;
  for (const auto& deal : deals) {
    std::set<std::string> seen;
    for (const WorkerGroup& group : deal) {
      EXPECT_EQ(group.size(), 4u);
      for (const std::string& w : group) EXPECT_TRUE(seen.insert(w).second) << w;
      groups.insert(std::set<std::string>(group.begin(), group.end()));
    }
    EXPECT_EQ(seen.size(), 16u);
  }
  EXPECT_GT(groups.size(), 4u) << "later deals must regroup the workers";
}

TEST(HuntPlanTest, GroupsAreBalancedSoNoneIsLeftAlone) {
  for (const auto& [hosts, sizes] : std::vector<std::pair<int, std::vector<size_t>>>{
           {9, {3, 3, 3}}, {6, {3, 3}}, {7, {4, 3}}, {2, {2}}, {13, {4, 3, 3, 3}}}) {
    std::vector<HostWorker> workers;
    for (int i = 0; i < hosts; ++i) workers.push_back({W(i), "host-" + std::to_string(i)});
    const auto deals = GroupDeals(workers, 4, 1);
    ASSERT_EQ(deals.size(), 1u);
    std::vector<size_t> got;
    for (const WorkerGroup& g : deals[0]) got.push_back(g.size());
    EXPECT_EQ(got, sizes) << hosts << " hosts";
  }
}

TEST(HuntPlanTest, PackRoundsNeverPutsAHostTwiceInARound) {
  std::map<std::string, std::string> host_of = {
      {"a", "h1"}, {"b", "h2"}, {"c", "h1"}, {"d", "h3"}, {"e", "h4"}};
  const auto rounds = PackRounds({{"a", "b"}, {"c", "d"}, {"d", "e"}, {"b", "e"}}, host_of);
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0], (std::vector<WorkerGroup>{{"a", "b"}, {"d", "e"}}));
  EXPECT_EQ(rounds[1], (std::vector<WorkerGroup>{{"c", "d"}, {"b", "e"}}));
}

}  // namespace
}  // namespace collbench

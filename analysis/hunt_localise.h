// SPDX-License-Identifier: Apache-2.0
// Localisation for hunts (docs/design/workflows.md#hunts): from the measurements of a
// survey (pairwise, groups, ring) to suspects, and from re-tests with
// healthy peers to verdicts.
//
// Robust statistics throughout: every figure is judged against the median
// of its phase, and its spread is the median absolute deviation (scaled by
// 1.4826 to read as a standard deviation), never a mean and a standard
// deviation that the one slow node being looked for drags. Bandwidths vary
// by factors (a contended link is 30% slower, a bad one five times), so the
// spread and the z-scores are taken on their logarithms: a figure at a
// fifth of the median stands as far out as one at five times it. A
// measurement is slow when both hold: its ratio to the median is below the
// threshold (a slowdown that matters) and its robust z-score is below -z
// (one that stands out from the fleet's own spread). The spread is floored
// at 2%, so a very even fleet does not turn noise into huge z-scores.
//
// Verdicts, per suspect, from its re-tests against the survey's reference:
//   CONFIRMED_BAD  slow with every healthy peer it was re-tested with;
//   RACK_SUSPECT   a rack, not a node (hunt_racks.h): found from the survey
//                  alone, its runs across its boundary set aside;
//   LINK_SUSPECT   slow with some peers only (they are named): the links;
//   INCONCLUSIVE   the survey's slowness did not reproduce, or nothing
//                  could be re-tested.
//
// The pairwise reference is the median pair, which is sound while fewer
// than half of the pairs touch a bad node: one bad node among at least 5
// hosts (it is in 2/N of the pairs). The hunt says so when it has fewer.
// A topology hunt's passes (within, across, random) share one reference:
// the pairs within racks, which share a switch, so that a slow uplink, which
// slows most of the pairs across racks when there are few racks, does not
// set the scale it is judged by (all of its pairs when fewer than 3 are
// within racks).
//
// Pure functions; deterministic.
#ifndef COLLBENCH_ANALYSIS_HUNT_LOCALISE_H_
#define COLLBENCH_ANALYSIS_HUNT_LOCALISE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "analysis/hunt_plan.h"
#include "collbench/v1/hunt.pb.h"

namespace collbench {

struct HuntThresholds {
  double ratio = 0.75;  // slow below this fraction of the median
  double z = 3;         // and below this many robust deviations under it
};

// The survey's phases whose runs are pairs of workers on two hosts:
// pairwise, and a topology hunt's passes within, across and random.
bool SurveyPairPhase(absl::string_view phase);

// The key of a topology hunt's passes' shared centre in SurveyScore.centres.
inline constexpr char kTopologyCentre[] = "topology";

// The median of `values` (any order; the mean of the middle two when
// their count is even); 0 when there are none.
double Median(std::vector<double> values);

struct RobustCentre {
  double median = 0;
  // 1.4826 x the median absolute deviation of the values' natural
  // logarithms from the median's, at least 0.02 (2%).
  double spread = 0;
  int count = 0;
};

// Of the values (any order; positive); zero count: median and spread 0.
RobustCentre RobustCentreOf(std::vector<double> values);
// (log value - log median) / spread; 0 when the spread is 0.
double RobustZ(double value, const RobustCentre& centre);

// Sets ratio, z and slow of `m` against `reference` (a failed measurement,
// or one with no figure, is left unscored and not slow).
void ScoreMeasurement(const RobustCentre& reference, const HuntThresholds& thresholds,
                      v1::HuntMeasurement* m);

struct SurveyScore {
  // By phase ("pairwise", "ring"), groups by size ("groups/4"), and a
  // topology hunt's three passes as one ("topology").
  std::map<std::string, RobustCentre> centres;
  std::vector<v1::HuntWorker> workers;          // ScoreWorkers
};

// The survey's measurements scored in place against their phase's centre,
// and its workers. The centres leave out the runs of workers that a first
// pass finds slow, so a bad node does not set the scale it is judged by.
// `host_of`: every worker of the hunt and its host.
SurveyScore ScoreSurvey(const HuntThresholds& thresholds,
                        const std::map<std::string, std::string>& host_of,
                        std::vector<v1::HuntMeasurement>* survey);

// Every worker of `host_of` with the median ratio of the scored survey
// measurements it took part in, its robust z among the workers, and how
// many of them were slow; sorted slowest first, then by name. A worker in
// no successful measurement has ratio 0 and is not judged (measurements 0).
// A measurement a rack explains (explained_by) counts for neither worker.
std::vector<v1::HuntWorker> ScoreWorkers(const std::vector<v1::HuntMeasurement>& survey,
                                         const std::map<std::string, std::string>& host_of);

// A worker is slow when its median ratio is below the threshold, its robust
// z among the workers below -z, and at least half of its own runs were
// slow: a bad node is slow with (nearly) every peer, while a healthy one
// that drew a few contended runs is not.
bool SlowWorker(const v1::HuntWorker& worker, const HuntThresholds& thresholds);

struct HuntFindings {
  // Workers slow across their measurements (median ratio below the
  // threshold, z below -z), slowest first, and the ring's stragglers.
  std::vector<std::string> slow_workers;
  // Slow pairwise measurements neither of whose workers is slow: a link.
  std::vector<std::pair<std::string, std::string>> slow_links;
  // Workers to re-test against: neither slow nor in a slow measurement
  // that no slow worker explains, best first.
  std::vector<std::string> healthy;
  // Racks found slow across their boundary (RACK_SUSPECT, hunt_racks.h),
  // and every worker's rack: a re-test does not cross such a rack's
  // boundary, which would measure the rack again, not the worker.
  std::vector<v1::HuntSuspect> racks;
  std::map<std::string, std::string> rack_of;  // worker -> rack; "" unknown
};

// `stragglers`: workers a ring run flagged (its slowest rank well above the
// median rank); they are re-tested as slow workers are.
HuntFindings Localise(const std::vector<v1::HuntMeasurement>& survey,
                      const std::vector<v1::HuntWorker>& workers,
                      const std::vector<std::string>& stragglers,
                      const HuntThresholds& thresholds);

// The re-test runs (pairs): every slow worker with up to `peers` healthy
// workers on other hosts; every slow link again, and each of its ends with
// a healthy worker; and one pair of healthy workers as a control. No pair
// but a slow link crosses the boundary of a rack in findings.racks.
std::vector<WorkerGroup> RetestRuns(const HuntFindings& findings,
                                    const std::map<std::string, std::string>& host_of,
                                    int peers);

// The verdicts: `retests` scored against the survey's reference, with the
// racks of `findings`, ranked CONFIRMED_BAD, RACK_SUSPECT, LINK_SUSPECT,
// INCONCLUSIVE, the slowest first within each.
std::vector<v1::HuntSuspect> Classify(const HuntFindings& findings,
                                      const std::vector<v1::HuntMeasurement>& survey,
                                      const std::vector<v1::HuntMeasurement>& retests,
                                      const std::vector<v1::HuntWorker>& workers);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_HUNT_LOCALISE_H_

// SPDX-License-Identifier: Apache-2.0
#include "analysis/hunt_localise.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace collbench {
namespace {

constexpr double kMadToSigma = 1.4826;
// The spread's floor: 2% (in natural log units, log(1.02) is about 0.02).
constexpr double kMinSpread = 0.02;
// What a non-positive value counts as, so its logarithm is finite.
constexpr double kTiny = 1e-300;

bool TopologyPhase(absl::string_view phase) {
  return phase == "within" || phase == "across" || phase == "random";
}

// What a measurement is compared with: its phase's runs, for groups those
// of its size (an all-reduce over 3 is not one over 4), and a topology
// hunt's passes together.
std::string PhaseKey(const v1::HuntMeasurement& m) {
  if (TopologyPhase(m.phase())) return kTopologyCentre;
  return m.phase() == "groups" ? absl::StrCat(m.phase(), "/", m.workers_size()) : m.phase();
}

bool Measured(const v1::HuntMeasurement& m) {
  return m.error().empty() && m.busbw_bytes_per_s() > 0;
}

bool Has(const v1::HuntMeasurement& m, const std::string& worker) {
  return std::find(m.workers().begin(), m.workers().end(), worker) != m.workers().end();
}

// The other worker of a pair measurement, or "" when `m` is not a pair.
std::string OtherOf(const v1::HuntMeasurement& m, const std::string& worker) {
  if (m.workers_size() != 2) return "";
  return m.workers(0) == worker ? m.workers(1) : m.workers(0);
}

int VerdictRank(const std::string& verdict) {
  if (verdict == "CONFIRMED_BAD") return 0;
  if (verdict == "RACK_SUSPECT") return 1;
  if (verdict == "LINK_SUSPECT") return 2;
  return 3;
}

const v1::HuntWorker* FindWorker(const std::vector<v1::HuntWorker>& workers,
                                 const std::string& name) {
  for (const v1::HuntWorker& w : workers) {
    if (w.worker() == name) return &w;
  }
  return nullptr;
}

std::string Ratio(double ratio) { return absl::StrFormat("%.2f", ratio); }

// A slow worker's verdict from its re-tests with healthy peers.
v1::HuntSuspect ClassifyWorker(const std::string& worker,
                               const std::vector<v1::HuntMeasurement>& survey,
                               const std::vector<v1::HuntMeasurement>& retests,
                               const std::vector<v1::HuntWorker>& workers) {
  v1::HuntSuspect suspect;
  suspect.set_worker(worker);
  const v1::HuntWorker* scored = FindWorker(workers, worker);
  if (scored != nullptr) suspect.set_z(scored->z());
  int survey_slow = 0, survey_total = 0;
  for (const v1::HuntMeasurement& m : survey) {
    if (!Has(m, worker) || !Measured(m)) continue;
    ++survey_total;
    if (m.slow()) {
      ++survey_slow;
      suspect.add_runs(m.run());
    }
  }
  std::vector<double> ratios;
  std::vector<std::string> slow_with, fine_with;
  for (const v1::HuntMeasurement& m : retests) {
    if (!Has(m, worker) || !Measured(m)) continue;
    suspect.add_runs(m.run());
    ratios.push_back(m.ratio());
    (m.slow() ? slow_with : fine_with).push_back(OtherOf(m, worker));
  }
  const std::string survey_text =
      survey_total > 0
          ? absl::StrCat("survey: slow in ", survey_slow, " of ", survey_total, " runs")
          : "survey: a ring straggler";
  suspect.set_ratio(Median(ratios));
  if (ratios.empty()) {
    suspect.set_verdict("INCONCLUSIVE");
    suspect.set_ratio(scored != nullptr ? scored->ratio() : 0);
    suspect.set_evidence(absl::StrCat(
        survey_text, "; no re-test with a healthy peer on another host could be run"));
  } else if (fine_with.empty()) {
    suspect.set_verdict("CONFIRMED_BAD");
    suspect.set_evidence(absl::StrCat(Ratio(suspect.ratio()), " of the fleet median with ",
                                      slow_with.size(), " of ", slow_with.size(),
                                      " healthy peers (", survey_text, ")"));
  } else if (slow_with.empty()) {
    suspect.set_verdict("INCONCLUSIVE");
    suspect.set_evidence(absl::StrCat("did not reproduce: ", Ratio(suspect.ratio()),
                                      " of the fleet median with ", fine_with.size(),
                                      " healthy peers (", survey_text, ")"));
  } else {
    suspect.set_verdict("LINK_SUSPECT");
    for (const std::string& peer : slow_with) suspect.add_peers(peer);
    suspect.set_evidence(absl::StrCat("slow with ", absl::StrJoin(slow_with, ", "),
                                      " only; fine with ", absl::StrJoin(fine_with, ", "), " (",
                                      survey_text, ")"));
  }
  return suspect;
}

// A slow link's verdict: the pair again, and each end with a healthy peer.
std::vector<v1::HuntSuspect> ClassifyLink(const std::string& a, const std::string& b,
                                          const std::vector<v1::HuntMeasurement>& survey,
                                          const std::vector<v1::HuntMeasurement>& retests) {
  std::vector<std::string> runs;
  double survey_ratio = 0, survey_z = 0;
  for (const v1::HuntMeasurement& m : survey) {
    if (m.workers_size() == 2 && Has(m, a) && Has(m, b)) {
      runs.push_back(m.run());
      survey_ratio = m.ratio();
      survey_z = m.z();
    }
  }
  const v1::HuntMeasurement* pair = nullptr;
  std::map<std::string, std::vector<bool>> elsewhere;  // end -> slow with other peers
  for (const v1::HuntMeasurement& m : retests) {
    if (!Measured(m) || m.workers_size() != 2) continue;
    if (Has(m, a) && Has(m, b)) {
      pair = &m;
      runs.push_back(m.run());
    } else if (Has(m, a) || Has(m, b)) {
      elsewhere[Has(m, a) ? a : b].push_back(m.slow());
      runs.push_back(m.run());
    }
  }
  auto all_slow = [&](const std::string& end) {
    const auto it = elsewhere.find(end);
    return it != elsewhere.end() && !it->second.empty() &&
           std::all_of(it->second.begin(), it->second.end(), [](bool slow) { return slow; });
  };
  auto make = [&](const std::string& worker, const std::string& verdict) {
    v1::HuntSuspect s;
    s.set_worker(worker);
    s.set_verdict(verdict);
    s.set_z(survey_z);
    s.set_ratio(pair != nullptr ? pair->ratio() : survey_ratio);
    for (const std::string& run : runs) s.add_runs(run);
    return s;
  };
  const std::string survey_text =
      absl::StrCat("survey: ", Ratio(survey_ratio), " of the fleet median, z ",
                   absl::StrFormat("%.1f", survey_z));
  if (pair == nullptr || !pair->slow()) {
    v1::HuntSuspect s = make(a, "INCONCLUSIVE");
    s.add_peers(b);
    s.set_evidence(pair == nullptr
                       ? absl::StrCat("the pair with ", b, " could not be re-tested (",
                                      survey_text, ")")
                       : absl::StrCat("did not reproduce with ", b, ": ", Ratio(pair->ratio()),
                                      " of the fleet median (", survey_text, ")"));
    return {s};
  }
  std::vector<v1::HuntSuspect> out;
  for (const std::string& end : {a, b}) {
    if (!all_slow(end)) continue;
    v1::HuntSuspect s = make(end, "CONFIRMED_BAD");
    s.set_evidence(absl::StrCat("slow with ", end == a ? b : a,
                                " and with every healthy peer it was re-tested with (",
                                survey_text, ")"));
    out.push_back(std::move(s));
  }
  if (!out.empty()) return out;
  v1::HuntSuspect s = make(a, "LINK_SUSPECT");
  s.add_peers(b);
  s.set_evidence(absl::StrCat("the link to ", b, ": ", Ratio(pair->ratio()),
                              " of the fleet median again, while both ends are fine with "
                              "healthy peers (",
                              survey_text, ")"));
  return {s};
}

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

bool SurveyPairPhase(absl::string_view phase) {
  return phase == "pairwise" || TopologyPhase(phase);
}

bool SlowWorker(const v1::HuntWorker& w, const HuntThresholds& thresholds) {
  return w.measurements() > 0 && w.ratio() < thresholds.ratio && w.z() < -thresholds.z &&
         2 * w.slow() >= w.measurements();
}

RobustCentre RobustCentreOf(std::vector<double> values) {
  RobustCentre centre;
  centre.count = static_cast<int>(values.size());
  if (values.empty()) return centre;
  centre.median = Median(values);
  if (centre.median <= 0) return centre;
  const double log_median = std::log(centre.median);
  for (double& v : values) v = std::fabs(std::log(std::max(v, kTiny)) - log_median);
  centre.spread = std::max(kMadToSigma * Median(values), kMinSpread);
  return centre;
}

double RobustZ(double value, const RobustCentre& centre) {
  if (centre.spread <= 0 || centre.median <= 0) return 0;
  return (std::log(std::max(value, kTiny)) - std::log(centre.median)) / centre.spread;
}

void ScoreMeasurement(const RobustCentre& reference, const HuntThresholds& thresholds,
                      v1::HuntMeasurement* m) {
  if (!Measured(*m) || reference.median <= 0) {
    m->set_slow(false);
    return;
  }
  m->set_ratio(m->busbw_bytes_per_s() / reference.median);
  m->set_z(RobustZ(m->busbw_bytes_per_s(), reference));
  m->set_slow(m->ratio() < thresholds.ratio && m->z() < -thresholds.z);
}

namespace {

// Each phase's centre over its measured runs that touch none of `left_out`
// (all of them when fewer than 3 would be left); a topology hunt's over
// its runs within racks when there are 3 of them (clean ones first).
std::map<std::string, RobustCentre> Centres(const std::vector<v1::HuntMeasurement>& survey,
                                            const std::set<std::string>& left_out) {
  std::map<std::string, std::vector<double>> all, clean;
  std::vector<double> within, within_clean;
  for (const v1::HuntMeasurement& m : survey) {
    if (!Measured(m)) continue;
    all[PhaseKey(m)].push_back(m.busbw_bytes_per_s());
    const bool touches = std::any_of(m.workers().begin(), m.workers().end(),
                                     [&](const std::string& w) { return left_out.count(w) > 0; });
    if (!touches) clean[PhaseKey(m)].push_back(m.busbw_bytes_per_s());
    if (m.phase() == "within") {
      within.push_back(m.busbw_bytes_per_s());
      if (!touches) within_clean.push_back(m.busbw_bytes_per_s());
    }
  }
  std::map<std::string, RobustCentre> centres;
  for (auto& [phase, values] : all) {
    std::vector<double>& kept = clean[phase];
    if (phase == kTopologyCentre && within.size() >= 3) {
      centres[phase] = RobustCentreOf(within_clean.size() >= 3 ? within_clean : within);
      continue;
    }
    centres[phase] = RobustCentreOf(kept.size() >= 3 ? std::move(kept) : std::move(values));
  }
  return centres;
}

}  // namespace

SurveyScore ScoreSurvey(const HuntThresholds& thresholds,
                        const std::map<std::string, std::string>& host_of,
                        std::vector<v1::HuntMeasurement>* survey) {
  // First against every run; then, with the workers that this shows slow
  // left out of the centres, again: a bad node is in 2/N of the pairs, and
  // its slow runs would otherwise pull the median down and widen the
  // spread that it is judged by.
  SurveyScore score;
  std::set<std::string> slow;
  for (int pass = 0; pass < 2; ++pass) {
    score.centres = Centres(*survey, slow);
    for (v1::HuntMeasurement& m : *survey) {
      ScoreMeasurement(score.centres[PhaseKey(m)], thresholds, &m);
    }
    score.workers = ScoreWorkers(*survey, host_of);
    for (const v1::HuntWorker& w : score.workers) {
      // A candidate to leave out of the centres: its median alone (its
      // runs' own verdicts are what the centres are for).
      if (w.measurements() > 0 && w.ratio() < thresholds.ratio && w.z() < -thresholds.z) {
        slow.insert(w.worker());
      }
    }
    if (slow.empty()) break;
  }
  return score;
}

std::vector<v1::HuntWorker> ScoreWorkers(const std::vector<v1::HuntMeasurement>& survey,
                                         const std::map<std::string, std::string>& host_of) {
  std::map<std::string, std::vector<double>> ratios;
  std::map<std::string, int> slow;
  for (const v1::HuntMeasurement& m : survey) {
    // The one ring run says nothing of one worker against another (its
    // stragglers are judged apart).
    if (!Measured(m) || m.ratio() <= 0 || m.phase() == "ring" || !m.explained_by().empty()) {
      continue;
    }
    for (const std::string& worker : m.workers()) {
      ratios[worker].push_back(m.ratio());
      if (m.slow()) ++slow[worker];
    }
  }
  std::vector<v1::HuntWorker> workers;
  std::vector<double> medians;
  for (const auto& [name, host] : host_of) {
    v1::HuntWorker w;
    w.set_worker(name);
    w.set_host_id(host);
    const auto it = ratios.find(name);
    if (it != ratios.end()) {
      w.set_measurements(static_cast<int>(it->second.size()));
      w.set_ratio(Median(it->second));
      w.set_slow(slow[name]);
      medians.push_back(w.ratio());
    }
    workers.push_back(std::move(w));
  }
  const RobustCentre centre = RobustCentreOf(medians);
  for (v1::HuntWorker& w : workers) {
    if (w.measurements() > 0) w.set_z(RobustZ(w.ratio(), centre));
  }
  std::sort(workers.begin(), workers.end(), [](const v1::HuntWorker& x, const v1::HuntWorker& y) {
    if ((x.measurements() > 0) != (y.measurements() > 0)) return x.measurements() > 0;
    if (x.ratio() != y.ratio()) return x.ratio() < y.ratio();
    return x.worker() < y.worker();
  });
  return workers;
}

HuntFindings Localise(const std::vector<v1::HuntMeasurement>& survey,
                      const std::vector<v1::HuntWorker>& workers,
                      const std::vector<std::string>& stragglers,
                      const HuntThresholds& thresholds) {
  HuntFindings findings;
  std::set<std::string> slow;
  for (const v1::HuntWorker& w : workers) {  // slowest first
    if (SlowWorker(w, thresholds)) {
      findings.slow_workers.push_back(w.worker());
      slow.insert(w.worker());
    }
  }
  for (const std::string& worker : stragglers) {
    if (slow.insert(worker).second) findings.slow_workers.push_back(worker);
  }
  // Workers in a slow run that no slow worker explains (a bad node makes
  // every peer's run with it slow; those peers stay healthy).
  std::set<std::string> in_slow_run;
  for (const v1::HuntMeasurement& m : survey) {
    if (!m.slow() || !m.explained_by().empty()) continue;
    const bool explained = std::any_of(m.workers().begin(), m.workers().end(),
                                       [&](const std::string& w) { return slow.count(w) > 0; });
    if (!explained) {
      for (const std::string& worker : m.workers()) in_slow_run.insert(worker);
    }
    if (SurveyPairPhase(m.phase()) && m.workers_size() == 2 && !slow.count(m.workers(0)) &&
        !slow.count(m.workers(1))) {
      findings.slow_links.emplace_back(std::min(m.workers(0), m.workers(1)),
                                       std::max(m.workers(0), m.workers(1)));
    }
  }
  std::sort(findings.slow_links.begin(), findings.slow_links.end());
  findings.slow_links.erase(std::unique(findings.slow_links.begin(), findings.slow_links.end()),
                            findings.slow_links.end());
  for (auto it = workers.rbegin(); it != workers.rend(); ++it) {  // best first
    if (it->measurements() > 0 && !slow.count(it->worker()) && !in_slow_run.count(it->worker())) {
      findings.healthy.push_back(it->worker());
    }
  }
  return findings;
}

std::vector<WorkerGroup> RetestRuns(const HuntFindings& findings,
                                    const std::map<std::string, std::string>& host_of,
                                    int peers) {
  auto host = [&](const std::string& worker) {
    auto it = host_of.find(worker);
    return it == host_of.end() ? worker : it->second;
  };
  std::set<std::string> slow_racks;
  for (const v1::HuntSuspect& rack : findings.racks) slow_racks.insert(rack.rack());
  auto rack = [&](const std::string& worker) {
    auto it = findings.rack_of.find(worker);
    return it == findings.rack_of.end() ? std::string() : it->second;
  };
  // Whether a run of the two would cross a slow rack's boundary.
  auto crosses_slow_rack = [&](const std::string& x, const std::string& y) {
    return rack(x) != rack(y) && (slow_racks.count(rack(x)) > 0 || slow_racks.count(rack(y)) > 0);
  };
  // Healthy peers on hosts other than `avoid`'s, spread over the healthy
  // list (each call starts where the last left off) so one healthy worker
  // does not carry every re-test.
  size_t next = 0;
  auto peers_for = [&](const std::string& worker, const std::set<std::string>& avoid_hosts,
                       int count) {
    std::vector<std::string> picked;
    for (size_t seen = 0; seen < findings.healthy.size() && static_cast<int>(picked.size()) < count;
         ++seen) {
      const std::string& h = findings.healthy[(next + seen) % findings.healthy.size()];
      if (avoid_hosts.count(host(h)) || crosses_slow_rack(worker, h)) continue;
      picked.push_back(h);
    }
    if (!findings.healthy.empty()) next = (next + picked.size()) % findings.healthy.size();
    return picked;
  };
  std::vector<WorkerGroup> runs;
  for (const std::string& worker : findings.slow_workers) {
    for (const std::string& peer : peers_for(worker, {host(worker)}, peers)) {
      runs.push_back({worker, peer});
    }
  }
  for (const auto& [a, b] : findings.slow_links) {
    runs.push_back({a, b});
    for (const std::string& end : {a, b}) {
      for (const std::string& peer : peers_for(end, {host(a), host(b)}, 1)) {
        runs.push_back({end, peer});
      }
    }
  }
  if (!runs.empty() && findings.healthy.size() >= 2) {
    const std::string& first = findings.healthy[0];
    for (size_t i = 1; i < findings.healthy.size(); ++i) {
      if (host(findings.healthy[i]) != host(first) &&
          !crosses_slow_rack(first, findings.healthy[i])) {
        runs.push_back({first, findings.healthy[i]});
        break;
      }
    }
  }
  return runs;
}

std::vector<v1::HuntSuspect> Classify(const HuntFindings& findings,
                                      const std::vector<v1::HuntMeasurement>& survey,
                                      const std::vector<v1::HuntMeasurement>& retests,
                                      const std::vector<v1::HuntWorker>& workers) {
  std::vector<v1::HuntSuspect> suspects = findings.racks;
  for (const std::string& worker : findings.slow_workers) {
    suspects.push_back(ClassifyWorker(worker, survey, retests, workers));
  }
  std::set<std::string> named;
  for (const v1::HuntSuspect& s : suspects) named.insert(s.worker());
  for (const auto& [a, b] : findings.slow_links) {
    for (v1::HuntSuspect& s : ClassifyLink(a, b, survey, retests)) {
      if (s.verdict() == "CONFIRMED_BAD" && !named.insert(s.worker()).second) continue;
      suspects.push_back(std::move(s));
    }
  }
  std::stable_sort(suspects.begin(), suspects.end(),
                   [](const v1::HuntSuspect& x, const v1::HuntSuspect& y) {
                     if (VerdictRank(x.verdict()) != VerdictRank(y.verdict())) {
                       return VerdictRank(x.verdict()) < VerdictRank(y.verdict());
                     }
                     return x.ratio() < y.ratio();
                   });
  return suspects;
}

}  // namespace collbench

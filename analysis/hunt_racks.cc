// SPDX-License-Identifier: Apache-2.0
#include "analysis/hunt_racks.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/hunt_localise.h"

namespace collbench {
namespace {

constexpr int kMinRunsAcross = 2;
// Of the runs across a rack's boundary, at least this share slow.
constexpr double kSlowAcrossShare = 0.75;
// The most runs a rack's verdict lists as its evidence.
constexpr size_t kMaxEvidenceRuns = 20;

struct RackRuns {
  std::set<std::string> hosts;
  std::vector<std::string> workers;
  int within = 0, within_slow = 0;
  int across = 0, across_slow = 0;
  // Runs across the boundary and the worker of them inside the rack.
  std::vector<std::pair<const v1::HuntMeasurement*, std::string>> across_runs;
  std::vector<double> within_ratios;
};

bool Counted(const v1::HuntMeasurement& m) {
  return SurveyPairPhase(m.phase()) && m.workers_size() == 2 && m.error().empty() &&
         m.busbw_bytes_per_s() > 0 && m.ratio() > 0;
}

std::string RackName(const std::string& rack) { return absl::StrCat("racks/", rack); }

}  // namespace

std::vector<v1::HuntSuspect> FindSlowRacks(const std::map<std::string, std::string>& rack_of,
                                           const std::map<std::string, std::string>& host_of,
                                           std::vector<v1::HuntMeasurement>* survey) {
  auto rack = [&](const std::string& worker) {
    auto it = rack_of.find(worker);
    return it == rack_of.end() ? std::string() : it->second;
  };
  std::map<std::string, RackRuns> racks;
  for (const auto& [worker, r] : rack_of) {
    if (r.empty()) continue;
    auto host = host_of.find(worker);
    racks[r].hosts.insert(host == host_of.end() ? worker : host->second);
    racks[r].workers.push_back(worker);
  }
  int total = 0, total_slow = 0;
  std::map<std::string, int> fine_within;  // worker -> its runs within its rack not slow
  for (const v1::HuntMeasurement& m : *survey) {
    if (!Counted(m)) continue;
    ++total;
    total_slow += m.slow() ? 1 : 0;
    const std::string a = rack(m.workers(0)), b = rack(m.workers(1));
    if (!a.empty() && a == b) {
      RackRuns& in = racks[a];
      ++in.within;
      in.within_slow += m.slow() ? 1 : 0;
      in.within_ratios.push_back(m.ratio());
      if (!m.slow()) {
        ++fine_within[m.workers(0)];
        ++fine_within[m.workers(1)];
      }
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      const std::string& side = i == 0 ? a : b;
      if (side.empty()) continue;
      RackRuns& r = racks[side];
      ++r.across;
      r.across_slow += m.slow() ? 1 : 0;
      r.across_runs.emplace_back(&m, m.workers(i));
    }
  }
  std::vector<v1::HuntSuspect> found;
  std::vector<std::string> slow_racks;
  size_t judged = 0;  // racks with runs across and within
  for (const auto& [name, r] : racks) {
    if (r.hosts.size() < 2 || r.within == 0 || r.across < kMinRunsAcross) continue;
    ++judged;
    // Its workers that are fine with another of the rack: the rack's
    // verdict rests on theirs, so one bad node inside does not hide it.
    std::set<std::string> fine;
    for (const std::string& w : r.workers) {
      if (fine_within.count(w)) fine.insert(w);
    }
    int across = 0, across_slow = 0;
    std::vector<double> ratios, zs;
    for (const auto& [m, inside] : r.across_runs) {
      if (!fine.count(inside)) continue;
      ++across;
      across_slow += m->slow() ? 1 : 0;
      ratios.push_back(m->ratio());
      zs.push_back(m->z());
    }
    const int others = total - r.within - r.across;
    const int others_slow = total_slow - r.within_slow - r.across_slow;
    const bool slow_across = fine.size() >= 2 && across >= kMinRunsAcross &&
                             across_slow >= kSlowAcrossShare * across &&
                             2 * others_slow < std::max(others, 1);
    if (!slow_across) continue;
    slow_racks.push_back(name);
    v1::HuntSuspect s;
    s.set_rack(name);
    s.set_verdict("RACK_SUSPECT");
    for (const std::string& w : r.workers) s.add_peers(w);
    for (const auto& [m, inside] : r.across_runs) {
      if (m->slow() && static_cast<size_t>(s.runs_size()) < kMaxEvidenceRuns) s.add_runs(m->run());
    }
    s.set_ratio(Median(ratios));
    s.set_z(Median(zs));
    s.set_evidence(absl::StrFormat(
        "%d of its %d hosts are fine with each other (%.2f of the reference within the rack, %d "
        "of %d runs slow) and slow with the other racks' hosts (%.2f, %d of %d runs slow), while "
        "%s: its uplink or switch, not its nodes",
        fine.size(), r.hosts.size(), Median(r.within_ratios), r.within_slow, r.within, s.ratio(),
        across_slow, across,
        others > 0 ? absl::StrFormat("%d of the %d runs elsewhere are slow", others_slow, others)
                   : std::string("no run is elsewhere")));
    found.push_back(std::move(s));
  }
  if (found.size() >= 2 && found.size() == judged) {
    for (v1::HuntSuspect& s : found) {
      s.set_evidence(
          absl::StrCat(s.evidence(),
                       "; but every rack is slow across, so it may as well be the fabric "
                       "between them (with two racks, either uplink: a third rack would tell)"));
    }
  }
  const std::set<std::string> slow(slow_racks.begin(), slow_racks.end());
  for (v1::HuntMeasurement& m : *survey) {
    m.clear_explained_by();  // an earlier analysis's
    if (!SurveyPairPhase(m.phase()) || m.workers_size() != 2) continue;
    const std::string a = rack(m.workers(0)), b = rack(m.workers(1));
    if (a == b) continue;
    if (slow.count(a)) {
      m.set_explained_by(RackName(a));
    } else if (slow.count(b)) {
      m.set_explained_by(RackName(b));
    }
  }
  std::stable_sort(
      found.begin(), found.end(),
      [](const v1::HuntSuspect& x, const v1::HuntSuspect& y) { return x.ratio() < y.ratio(); });
  return found;
}

}  // namespace collbench

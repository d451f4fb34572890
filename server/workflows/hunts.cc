// SPDX-License-Identifier: Apache-2.0
#include "server/workflows/hunts.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "analysis/html.h"
#include "analysis/hunt_plots.h"
#include "analysis/hunt_racks.h"
#include "analysis/pairwise_rounds.h"
#include "analysis/table.h"
#include "analysis/topology_pairs.h"
#include "api/capabilities.h"
#include "api/convert.h"
#include "common/units.h"
#include "common/worker_labels.h"

namespace collbench::workflows {
namespace {

constexpr uint64_t kDefaultSize = 1 << 20;
constexpr int kDefaultGroupSize = 4;
constexpr int kDefaultDeals = 3;
constexpr int kMaxDeals = 100;
constexpr int kDefaultRetestPeers = 3;
constexpr int kMaxRetestPeers = 16;
constexpr int64_t kDefaultSecondsPerSize = 2;
// A ring's rank this much slower than the median rank is a straggler
// (RankTiming.straggler's rule).
constexpr double kStragglerFactor = 1.5;
constexpr size_t kMinHostsForOneBadNode = 5;
// Above this many survey measurements, the output keeps the telling ones
// (those among the kTellingWorkers slowest workers, and the slow ones).
constexpr size_t kMaxOutputPairs = 50000;
constexpr size_t kTellingWorkers = 300;
// A hunt's run times out after this many times its sizes' time budgets,
// plus this allowance for the launch.
constexpr double kBudgetsPerRunTimeout = 10;
constexpr double kRunStartAllowanceS = 120;
// topology: the label keys that name a host's rack, finest first (the
// switch a host hangs off, then coarser): NVIDIA topograph's tier-0 fabric
// switch (its current and earlier names), collbench's own key, and the
// zone, Kubernetes' well-known topology label.
constexpr const char* kDefaultRackKeys[] = {
    "fabric.topograph.run/tier-0", "network.topology.nvidia.com/leaf",
    "network.topology.nvidia.com/block", "collbench.io/rack", "topology.kubernetes.io/zone"};
constexpr int kMaxRackKeys = 16;

std::string Pattern(const v1::HuntSpec& spec) {
  return spec.pattern().empty() ? "pairwise" : spec.pattern();
}
// Whether the hunt's survey has `phase` (pairwise, groups, ring, topology):
// "all" is the first three.
bool Runs(const v1::HuntSpec& spec, absl::string_view phase) {
  const std::string pattern = Pattern(spec);
  return (pattern == "all" && phase != "topology") || pattern == phase;
}
std::string PairOperation(const v1::HuntSpec& spec) {
  return spec.pair_operation().empty() ? "bw" : spec.pair_operation();
}
std::string GroupOperation(const v1::HuntSpec& spec) {
  return spec.group_operation().empty() ? "allreduce" : spec.group_operation();
}
int GroupSize(const v1::HuntSpec& spec) {
  return spec.group_size() == 0 ? kDefaultGroupSize : spec.group_size();
}
int Deals(const v1::HuntSpec& spec) { return spec.deals() == 0 ? kDefaultDeals : spec.deals(); }
int RetestPeers(const v1::HuntSpec& spec) {
  return spec.retest_peers() == 0 ? kDefaultRetestPeers : spec.retest_peers();
}
std::vector<std::string> RackKeys(const v1::HuntSpec& spec) {
  if (!spec.rack_keys().empty()) return {spec.rack_keys().begin(), spec.rack_keys().end()};
  return {std::begin(kDefaultRackKeys), std::end(kDefaultRackKeys)};
}

std::string WorkflowIdOf(absl::string_view name) {
  return std::string(absl::StripPrefix(name, "workflows/"));
}

std::string Short(absl::string_view worker) {
  return std::string(absl::StripPrefix(worker, "workers/"));
}

std::vector<HostWorker> HostWorkers(const std::vector<v1::HuntWorker>& selected) {
  std::vector<HostWorker> out;
  for (const v1::HuntWorker& w : selected) {
    out.push_back({w.worker(), w.host_id(), w.admission_order()});
  }
  return out;
}

std::map<std::string, std::string> HostOf(const std::vector<v1::HuntWorker>& selected) {
  std::map<std::string, std::string> out;
  for (const v1::HuntWorker& w : selected) out[w.worker()] = w.host_id();
  return out;
}

std::map<std::string, std::string> RackOf(const std::vector<v1::HuntWorker>& selected) {
  std::map<std::string, std::string> out;
  for (const v1::HuntWorker& w : selected) out[w.worker()] = w.rack();
  return out;
}

// Each host's rack: that of the first of its workers in the fleet's order
// (`selected` is in it), so a second worker on a host cannot move it.
std::map<std::string, std::string> HostRacks(const std::vector<v1::HuntWorker>& selected) {
  std::map<std::string, std::string> out;
  for (const v1::HuntWorker& w : selected) out.emplace(w.host_id(), w.rack());
  return out;
}

absl::Status ValidateHunt(const v1::HuntSpec& h) {
  const std::string pattern = Pattern(h);
  if (pattern != "pairwise" && pattern != "groups" && pattern != "ring" && pattern != "all" &&
      pattern != "topology") {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.hunt.pattern: '", pattern, "' is not one of pairwise, groups, ring, all, topology"));
  }
  if (h.rack_keys_size() > kMaxRackKeys) {
    return absl::InvalidArgumentError(absl::StrCat("spec.hunt.rack_keys: ", h.rack_keys_size(),
                                                   " keys, more than ", kMaxRackKeys));
  }
  for (const std::string& key : h.rack_keys()) {
    if (absl::Status valid = ValidateWorkerLabel(key, "x"); !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.hunt.rack_keys: ", valid.message()));
    }
  }
  const std::string pair = PairOperation(h);
  if (pair != "bw" && pair != "bibw" && pair != "latency") {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.hunt.pair_operation: '", pair,
        "' is not a point-to-point operation (bw, bibw or latency)"));
  }
  if (h.group_size() != 0 && h.group_size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.hunt.group_size: ", h.group_size(), " is below 2"));
  }
  if (h.deals() < 0 || h.deals() > kMaxDeals) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.hunt.deals: ", h.deals(), " is outside 1..", kMaxDeals,
                     " (0: the default, ", kDefaultDeals, ")"));
  }
  if (h.threshold() < 0 || h.threshold() >= 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.hunt.threshold: ", h.threshold(),
        " is outside (0, 1): a worker is slow below this fraction of the fleet median (0: the "
        "default, 0.75)"));
  }
  if (h.z() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("spec.hunt.z: ", h.z(), " is negative"));
  }
  if (h.retest_peers() < 0 || h.retest_peers() > kMaxRetestPeers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.hunt.retest_peers: ", h.retest_peers(), " is outside 1..", kMaxRetestPeers,
        " (0: the default, ", kDefaultRetestPeers, ")"));
  }
  for (uint64_t size : h.sizes_bytes()) {
    if (size == 0) return absl::InvalidArgumentError("spec.hunt.sizes_bytes: a size is 0");
  }
  if (h.has_time_per_size() &&
      (h.time_per_size().seconds() < 0 ||
       (h.time_per_size().seconds() == 0 && h.time_per_size().nanos() <= 0))) {
    return absl::InvalidArgumentError("spec.hunt.time_per_size: must be positive");
  }
  return absl::OkStatus();
}

bool Selectable(const v1::Worker& w) {
  return !w.draining() && w.state() != v1::LOST && w.state() != v1::DRAINING;
}

// The measurement's figure at the run's largest (bandwidth) and smallest
// (latency) size, from the median iteration.
void Figure(const RunWithResults& run, v1::HuntMeasurement* m) {
  const v1::SizeResult* largest = nullptr;
  const v1::SizeResult* smallest = nullptr;
  for (const v1::SizeResult& r : run.results) {
    if (largest == nullptr || r.bytes() > largest->bytes()) largest = &r;
    if (smallest == nullptr || r.bytes() < smallest->bytes()) smallest = &r;
  }
  if (largest == nullptr) {
    m->set_error("no result");
    return;
  }
  double busbw = largest->busbw_bytes_per_s();
  if (largest->p50_s() > 0 && largest->avg_s() > 0) busbw *= largest->avg_s() / largest->p50_s();
  m->set_busbw_bytes_per_s(busbw);
  m->set_p50_s(smallest->p50_s());
}

}  // namespace

v1::OutputTable SuspectsTable(const v1::HuntOutput& hunt) {
  Table table{"suspects", "suspects, worst first",
              {"worker", "verdict", "peers", "ratio", "z", "runs", "evidence"}, {}, {}};
  for (const v1::HuntSuspect& s : hunt.suspects()) {
    std::vector<std::string> peers;
    for (const std::string& p : s.peers()) peers.push_back(Short(p));
    const std::string who =
        s.worker().empty() ? absl::StrCat("rack ", s.rack()) : Short(s.worker());
    table.rows.push_back({who + (s.quarantined() ? " (SUSPECT)" : ""), s.verdict(),
                          absl::StrJoin(peers, ","), absl::StrFormat("%.2f", s.ratio()),
                          absl::StrFormat("%.1f", s.z()), absl::StrCat(s.runs_size()),
                          s.evidence()});
  }
  if (hunt.suspects().empty()) table.notes.push_back("no suspect: every worker measured within the thresholds");
  return TableToProto(table);
}

namespace {

v1::OutputTable WorkersTable(const v1::HuntOutput& hunt) {
  const bool racks = HuntHasRacks(hunt);
  Table table{"hunt-workers", "per worker: median ratio to the fleet median, slowest first",
              {"worker", "host", "ratio", "z", "runs", "slow"}, {}, {}};
  if (racks) table.columns.insert(table.columns.begin() + 2, "rack");
  for (const v1::HuntWorker& w : hunt.workers()) {
    std::vector<std::string> row = {Short(w.worker()),
                                    w.host_id(),
                                    w.measurements() > 0 ? absl::StrFormat("%.2f", w.ratio()) : "-",
                                    w.measurements() > 0 ? absl::StrFormat("%.1f", w.z()) : "-",
                                    absl::StrCat(w.measurements()),
                                    absl::StrCat(w.slow())};
    if (racks) row.insert(row.begin() + 2, w.rack().empty() ? "-" : w.rack());
    table.rows.push_back(std::move(row));
  }
  return TableToProto(table);
}

}  // namespace

HuntThresholds ThresholdsOf(const v1::HuntSpec& spec) {
  HuntThresholds t;
  if (spec.threshold() > 0) t.ratio = spec.threshold();
  if (spec.z() > 0) t.z = spec.z();
  return t;
}

std::string HuntRunLabel(const HuntRun& run) {
  std::vector<std::string> names;
  for (const std::string& w : run.workers) names.push_back(Short(w));
  return absl::StrCat(run.phase, " ", absl::StrJoin(names, " "));
}

v1::RunSpec HuntRunSpec(const v1::WorkflowSpec& spec, const std::string& id, const HuntRun& run) {
  const v1::HuntSpec& h = spec.hunt();
  v1::RunSpec r;
  // The survey's pairs and their repeats and re-tests measure the same
  // point-to-point figure, so that one is read against the other.
  const bool point_to_point =
      SurveyPairPhase(run.phase) || run.phase == "retest" || run.phase == "repeat";
  r.set_operation(point_to_point ? PairOperation(h) : GroupOperation(h));
  if (h.sizes_bytes().empty()) {
    r.add_sizes_bytes(kDefaultSize);
  } else {
    *r.mutable_sizes_bytes() = h.sizes_bytes();
  }
  if (h.has_time_per_size()) {
    *r.mutable_time_budget() = h.time_per_size();
  } else {
    r.mutable_time_budget()->set_seconds(kDefaultSecondsPerSize);
  }
  r.set_mpi(h.mpi());
  r.set_transport(h.transport());
  // A run that takes far longer than its sizes' time budgets is stuck: it
  // must not hold the hunt's round for the default hour.
  const double per_size_s = static_cast<double>(r.time_budget().seconds()) +
                            static_cast<double>(r.time_budget().nanos()) * 1e-9;
  r.mutable_timeout()->set_seconds(static_cast<int64_t>(
      kRunStartAllowanceS + kBudgetsPerRunTimeout * per_size_s * r.sizes_bytes_size()));
  r.set_ranks(static_cast<int>(run.workers.size()));
  r.mutable_placement()->set_policy(v1::EXPLICIT);
  r.mutable_placement()->set_ranks_per_worker(1);
  for (const std::string& w : run.workers) r.mutable_placement()->add_workers(w);
  for (const auto& [key, value] : spec.labels()) (*r.mutable_labels())[key] = value;
  (*r.mutable_labels())["workflow"] = id;
  (*r.mutable_labels())[kHuntLabel] = id;
  (*r.mutable_labels())[kHuntPhaseLabel] = run.phase;
  return r;
}

namespace {

std::vector<HostWorker> PairwiseWorkers(const v1::HuntSpec& spec,
                                        const std::vector<v1::HuntWorker>& selected) {
  return Runs(spec, "pairwise") ? HostWorkers(selected) : std::vector<HostWorker>();
}

}  // namespace

SurveyPlan::SurveyPlan(const v1::HuntSpec& spec, const std::vector<v1::HuntWorker>& selected)
    : pairwise_(PairwiseWorkers(spec, selected)) {
  runs_ = pairwise_.pairs();
  if (Runs(spec, "topology")) {
    const std::map<std::string, std::string> host_of = HostOf(selected);
    for (const TopologyPass& pass : TopologyPasses(HostWorkers(selected), HostRacks(selected))) {
      std::vector<WorkerGroup> pairs;
      for (const WorkerPair& pair : pass.pairs) pairs.push_back({pair.a, pair.b});
      runs_ += pairs.size();
      for (std::vector<WorkerGroup>& round : PackRounds(pairs, host_of)) {
        HuntRound r;
        for (WorkerGroup& pair : round) r.push_back({pass.name, std::move(pair)});
        rest_.push_back(std::move(r));
      }
    }
  }
  if (Runs(spec, "groups")) {
    for (const std::vector<WorkerGroup>& deal :
         GroupDeals(HostWorkers(selected), GroupSize(spec), Deals(spec))) {
      HuntRound r;
      for (const WorkerGroup& group : deal) r.push_back({"groups", group});
      runs_ += r.size();
      rest_.push_back(std::move(r));
    }
  }
  if (Runs(spec, "ring") && selected.size() >= 2) {
    WorkerGroup all;
    for (const v1::HuntWorker& w : selected) all.push_back(w.worker());
    rest_.push_back({{"ring", all}});
    ++runs_;
  }
}

HuntRound SurveyPlan::Round(size_t r) const {
  if (r >= pairwise_.rounds()) return rest_[r - pairwise_.rounds()];
  HuntRound round;
  for (const WorkerPair& pair : pairwise_.Round(r)) round.push_back({"pairwise", {pair.a, pair.b}});
  return round;
}

absl::StatusOr<HuntPlan> PlanHunt(const v1::WorkflowSpec& spec, const std::string& id,
                                  const std::vector<v1::Worker>& workers,
                                  const RunChecker& check) {
  const v1::HuntSpec& h = spec.hunt();
  if (absl::Status valid = ValidateHunt(h); !valid.ok()) return valid;
  if (absl::Status valid = ValidateWorkerSelector(spec.workers(), "spec.workers"); !valid.ok()) {
    return valid;
  }
  HuntPlan plan;
  std::set<std::string> hosts;
  const std::vector<std::string> rack_keys = RackKeys(h);
  for (const v1::Worker& w : workers) {
    if (!Selectable(w) || !SelectorMatches(spec.workers(), w.name(), w.inventory())) continue;
    v1::HuntWorker selected;
    selected.set_worker(w.name());
    selected.set_host_id(w.inventory().host_id().empty() ? w.name() : w.inventory().host_id());
    if (w.has_admit_time()) {
      selected.set_admission_order(absl::ToUnixNanos(TimeFromTimestamp(w.admit_time())));
    }
    for (const std::string& key : rack_keys) {
      auto label = w.inventory().labels().find(key);
      if (label != w.inventory().labels().end()) {
        selected.set_rack(label->second);
        break;
      }
    }
    hosts.insert(selected.host_id());
    plan.workers.push_back(std::move(selected));
  }
  // The fleet's order, as the rounds take it.
  auto fleet_order = [](const v1::HuntWorker& w) {
    return FleetOrder({w.worker(), w.host_id(), w.admission_order()});
  };
  std::sort(plan.workers.begin(), plan.workers.end(),
            [&](const v1::HuntWorker& a, const v1::HuntWorker& b) {
              return fleet_order(a) < fleet_order(b);
            });
  if (hosts.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.workers: a hunt needs workers on at least 2 hosts; ",
        spec.workers().empty() ? std::string("the fleet")
                               : absl::StrCat("the selection '", spec.workers(), "'"),
        " has ", plan.workers.size(), " connected worker", plan.workers.size() == 1 ? "" : "s",
        " on ", hosts.size(), " host", hosts.size() == 1 ? "" : "s"));
  }
  const SurveyPlan rounds(h, plan.workers);
  plan.survey_runs = static_cast<int>(rounds.runs());
  // Every run of a phase differs from the others by its workers only: the
  // first of each phase is checked as CreateRun will check it.
  std::set<std::string> checked;
  for (size_t r = 0; r < rounds.rounds(); ++r) {
    if (r > 0 && r + 1 < rounds.rounds() && checked.count("pairwise")) continue;  // alike
    for (const HuntRun& run : rounds.Round(r)) {
      if (!checked.insert(run.phase).second) continue;
      if (absl::Status ok = check(HuntRunSpec(spec, id, run)); !ok.ok()) {
        return absl::Status(ok.code(), absl::StrCat("spec.hunt (", run.phase, " run ",
                                                    HuntRunLabel(run), "): ", ok.message()));
      }
    }
  }
  plan.header.push_back(absl::StrFormat(
      "hunt: %s over %d workers on %d hosts: %d runs in %d rounds, then re-tests of the "
      "suspects with healthy peers",
      Pattern(h), plan.workers.size(), hosts.size(), plan.survey_runs, rounds.rounds()));
  if (Runs(h, "topology")) {
    std::set<std::string> racks;
    int unknown = 0;
    for (const auto& [host, rack] : HostRacks(plan.workers)) {
      if (rack.empty()) {
        ++unknown;
      } else {
        racks.insert(rack);
      }
    }
    plan.header.push_back(absl::StrCat(
        "racks: ", racks.size(), " (by ", absl::StrJoin(rack_keys, ", "), ")",
        unknown == 0 ? std::string()
                     : absl::StrCat("; ", unknown, " host", unknown == 1 ? "" : "s",
                                    " with none of those labels, each a rack of its own")));
  }
  if (hosts.size() < kMinHostsForOneBadNode && (Runs(h, "pairwise") || Runs(h, "topology"))) {
    plan.header.push_back(absl::StrCat(
        "note: with ", hosts.size(), " hosts one slow node is in half of the pairs or more, so "
        "the fleet median may be its speed; hunt over at least ", kMinHostsForOneBadNode,
        " hosts for a sound verdict"));
  }
  return plan;
}

v1::HuntMeasurement MeasurementOf(const HuntRun& planned, int round, const RunWithResults& run) {
  v1::HuntMeasurement m;
  for (const std::string& w : planned.workers) m.add_workers(w);
  m.set_phase(planned.phase);
  m.set_round(round);
  m.set_run(run.run.name());
  if (run.run.state() != v1::SUCCEEDED) {
    m.set_error(absl::StrCat(v1::RunState_Name(run.run.state()),
                             run.run.error().empty() ? "" : ": ", run.run.error()));
    return m;
  }
  Figure(run, &m);
  return m;
}

std::vector<std::string> RingStragglers(const RunWithResults& run) {
  const v1::SizeResult* largest = nullptr;
  for (const v1::SizeResult& r : run.results) {
    if (largest == nullptr || r.bytes() > largest->bytes()) largest = &r;
  }
  if (largest == nullptr || largest->slowest_rank() < 0 ||
      largest->slowest_vs_median() < kStragglerFactor) {
    return {};
  }
  // One rank per worker, in the placement's order.
  std::vector<std::string> rank_workers;
  for (const v1::RankHost& host : run.run.hosts()) {
    for (int i = 0; i < std::max(1, host.slots()); ++i) rank_workers.push_back(host.worker());
  }
  const int slowest = largest->slowest_rank();
  if (slowest >= static_cast<int>(rank_workers.size())) return {};
  return {rank_workers[slowest]};
}

HuntSurvey AnalyseSurvey(const v1::HuntSpec& spec, const std::vector<v1::HuntWorker>& selected,
                         const std::vector<std::string>& stragglers,
                         std::vector<v1::HuntMeasurement>* survey) {
  const HuntThresholds thresholds = ThresholdsOf(spec);
  HuntSurvey out;
  const std::map<std::string, std::string> host_of = HostOf(selected);
  const SurveyScore score = ScoreSurvey(thresholds, host_of, survey);
  if (auto it = score.centres.find("pairwise"); it != score.centres.end()) {
    out.reference = it->second;
  }
  if (auto it = score.centres.find(kTopologyCentre); it != score.centres.end()) {
    out.reference = it->second;
  }
  // Racks slow across their boundary first: the runs they explain then
  // count against none of their workers.
  const std::map<std::string, std::string> rack_of = RackOf(selected);
  std::vector<v1::HuntSuspect> racks = FindSlowRacks(rack_of, host_of, survey);
  out.workers = racks.empty() ? score.workers : ScoreWorkers(*survey, host_of);
  for (v1::HuntWorker& w : out.workers) w.set_rack(rack_of.at(w.worker()));  // every one selected
  out.findings = Localise(*survey, out.workers, stragglers, thresholds);
  out.findings.racks = std::move(racks);
  out.findings.rack_of = rack_of;
  std::vector<WorkerGroup> retests = RetestRuns(out.findings, host_of, RetestPeers(spec));
  for (std::vector<WorkerGroup>& round : PackRounds(retests, host_of)) {
    HuntRound r;
    for (WorkerGroup& pair : round) r.push_back({"retest", std::move(pair)});
    out.retest_rounds.push_back(std::move(r));
  }
  return out;
}

std::vector<HuntRound> RepeatRounds(const HuntSurvey& analysed,
                                    const std::vector<v1::HuntWorker>& selected) {
  std::vector<WorkerGroup> pairs;
  for (const auto& [a, b] : analysed.findings.slow_links) pairs.push_back({a, b});
  std::vector<HuntRound> rounds;
  for (std::vector<WorkerGroup>& round : PackRounds(pairs, HostOf(selected))) {
    HuntRound r;
    for (WorkerGroup& pair : round) r.push_back({"repeat", std::move(pair)});
    rounds.push_back(std::move(r));
  }
  return rounds;
}

void FoldRepeats(std::vector<v1::HuntMeasurement> repeats,
                 std::vector<v1::HuntMeasurement>* survey,
                 std::vector<v1::HuntMeasurement>* set_aside) {
  auto key = [](const v1::HuntMeasurement& m) {
    return m.workers_size() == 2 ? std::make_pair(std::min(m.workers(0), m.workers(1)),
                                                  std::max(m.workers(0), m.workers(1)))
                                 : std::make_pair(std::string(), std::string());
  };
  std::map<std::pair<std::string, std::string>, size_t> pair_at;
  for (size_t i = 0; i < survey->size(); ++i) {
    if (SurveyPairPhase((*survey)[i].phase())) pair_at[key((*survey)[i])] = i;
  }
  for (v1::HuntMeasurement& repeat : repeats) {
    auto it = pair_at.find(key(repeat));
    const bool better = it != pair_at.end() && repeat.error().empty() &&
                        repeat.busbw_bytes_per_s() > (*survey)[it->second].busbw_bytes_per_s();
    if (better) {
      v1::HuntMeasurement& counted = (*survey)[it->second];
      repeat.set_phase(counted.phase());
      counted.set_phase("repeat");
      std::swap(repeat, counted);
    } else {
      repeat.set_phase("repeat");
    }
    repeat.clear_ratio();
    repeat.clear_z();
    repeat.clear_slow();
    repeat.clear_explained_by();
    set_aside->push_back(std::move(repeat));
  }
}

v1::WorkflowOutput HuntOutputOf(const v1::HuntSpec& spec, const HuntSurvey& survey,
                                const std::vector<v1::HuntMeasurement>& measurements,
                                std::vector<v1::HuntMeasurement>* retests,
                                std::vector<v1::HuntMeasurement> set_aside) {
  const HuntThresholds thresholds = ThresholdsOf(spec);
  v1::WorkflowOutput output;
  v1::HuntOutput& hunt = *output.mutable_hunt();
  RobustCentre reference = survey.reference;
  if (reference.count == 0) {
    // No pairwise survey: the control pair of healthy workers is the
    // reference the suspects' re-tests are read against.
    std::vector<double> control;
    const std::set<std::string> slow(survey.findings.slow_workers.begin(),
                                     survey.findings.slow_workers.end());
    for (const v1::HuntMeasurement& m : *retests) {
      if (m.error().empty() && m.busbw_bytes_per_s() > 0 &&
          std::none_of(m.workers().begin(), m.workers().end(),
                       [&](const std::string& w) { return slow.count(w) > 0; })) {
        control.push_back(m.busbw_bytes_per_s());
      }
    }
    reference = RobustCentreOf(control);
    if (reference.count == 0 && !survey.findings.slow_workers.empty()) {
      hunt.add_notes("no healthy pair could be measured in the re-test: no reference for the suspects");
    }
  }
  for (v1::HuntMeasurement& m : *retests) ScoreMeasurement(reference, thresholds, &m);
  std::vector<v1::HuntMeasurement> survey_only;
  for (const v1::HuntMeasurement& m : measurements) survey_only.push_back(m);
  for (v1::HuntSuspect& s :
       Classify(survey.findings, survey_only, *retests, survey.workers)) {
    *hunt.add_suspects() = std::move(s);
  }
  hunt.set_fleet_median_bytes_per_s(reference.median);
  const std::string size =
      spec.sizes_bytes().empty()
          ? FormatBytes(kDefaultSize)
          : FormatBytes(*std::max_element(spec.sizes_bytes().begin(), spec.sizes_bytes().end()));
  const bool pairs = Runs(spec, "pairwise") || Runs(spec, "topology");
  hunt.set_metric(absl::StrCat(pairs ? PairOperation(spec) : GroupOperation(spec),
                               " bus bandwidth at ", size, ", from the median iteration"));
  int failed = 0;
  // A large fleet's pairs are kept where they say something: the slow and
  // failed ones, those of a suspect, and all among the slowest workers.
  const bool keep_all = measurements.size() <= kMaxOutputPairs;
  std::set<std::string> telling;
  for (const v1::HuntSuspect& s : hunt.suspects()) telling.insert(s.worker());
  for (const v1::HuntWorker& w : survey.workers) {  // slowest first
    if (telling.size() >= kTellingWorkers) break;
    telling.insert(w.worker());
  }
  int left_out = 0;
  for (const v1::HuntMeasurement& m : measurements) {
    if (!m.error().empty()) ++failed;
    const bool keep = keep_all || m.slow() || !m.error().empty() ||
                      std::all_of(m.workers().begin(), m.workers().end(),
                                  [&](const std::string& w) { return telling.count(w) > 0; }) ||
                      std::any_of(hunt.suspects().begin(), hunt.suspects().end(),
                                  [&](const v1::HuntSuspect& s) {
                                    return std::find(m.workers().begin(), m.workers().end(),
                                                     s.worker()) != m.workers().end();
                                  });
    if (!keep) {
      ++left_out;
      continue;
    }
    if (SurveyPairPhase(m.phase())) {
      *hunt.add_pairs() = m;
    } else {
      *hunt.add_groups() = m;
    }
  }
  if (left_out > 0) {
    hunt.add_notes(absl::StrCat(
        left_out, " of ", measurements.size(), " measurements are left out of this output: "
        "kept are the slow and failed ones, the suspects', and all among the ", kTellingWorkers,
        " slowest workers (every run is stored, labelled hunt=ID)"));
  }
  for (v1::HuntMeasurement& m : set_aside) {  // shown against the same centre, not counted
    if (!m.error().empty()) ++failed;
    if (survey.reference.count > 0) ScoreMeasurement(survey.reference, thresholds, &m);
    *hunt.add_pairs() = std::move(m);
  }
  for (const v1::HuntMeasurement& m : *retests) {
    if (!m.error().empty()) ++failed;
    *hunt.add_pairs() = m;
  }
  for (const v1::HuntWorker& w : survey.workers) *hunt.add_workers() = w;
  if (failed > 0) {
    hunt.add_notes(absl::StrCat(failed, " run", failed == 1 ? "" : "s",
                                " did not succeed and were left out of the statistics"));
  }
  hunt.add_notes(absl::StrFormat(
      "slow: below %.2f of the fleet median and a robust z-score (median, MAD) below -%.1f",
      thresholds.ratio, thresholds.z));
  *output.add_tables() = SuspectsTable(hunt);
  *output.add_tables() = WorkersTable(hunt);
  return output;
}

std::string HuntFiguresHtml(const v1::HuntOutput& hunt) {
  std::string html;
  const std::string heat_map = HuntHeatMapSvg(hunt);
  if (!heat_map.empty()) {
    absl::StrAppend(&html, "<h2>Pairwise heat map</h2>\n<p class=\"meta\">",
                    HtmlEscape(hunt.metric()), ", each pair's ratio to the fleet median; ",
                    HuntHasRacks(hunt) ? "rack by rack (the suspect racks first), in each " : "",
                    "the suspects first, then the workers slowest first.</p>\n", heat_map, "\n");
  }
  const std::string distribution = HuntDistributionSvg(hunt);
  if (!distribution.empty()) {
    absl::StrAppend(&html, "<h2>Per worker</h2>\n<p class=\"meta\">each worker's median ratio "
                           "to the fleet median over its runs.</p>\n",
                    distribution, "\n");
  }
  return html;
}

std::string HuntReportHtml(const v1::Workflow& workflow) {
  std::string body;
  for (const std::string& line : workflow.output().header()) {
    absl::StrAppend(&body, "<p class=\"meta\">", HtmlEscape(line), "</p>\n");
  }
  if (!workflow.error().empty()) {
    absl::StrAppend(&body, "<p class=\"why\">", HtmlEscape(workflow.error()), "</p>\n");
  }
  const v1::HuntOutput& hunt = workflow.output().hunt();
  for (const v1::OutputTable& table : workflow.output().tables()) {
    if (table.id() == "suspects") body += HtmlTable(TableFromProto(table), CheckVerdictClass);
  }
  body += HuntFiguresHtml(hunt);
  for (const v1::OutputTable& table : workflow.output().tables()) {
    if (table.id() != "suspects") body += HtmlTable(TableFromProto(table), CheckVerdictClass);
  }
  for (const std::string& note : hunt.notes()) {
    absl::StrAppend(&body, "<p class=\"meta\">", HtmlEscape(note), "</p>\n");
  }
  return RenderHtmlPage({absl::StrCat("collbench hunt ", WorkflowIdOf(workflow.name())), "", body,
                         "", ""});
}

}  // namespace collbench::workflows

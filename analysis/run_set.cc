// SPDX-License-Identifier: Apache-2.0
#include "analysis/run_set.h"

#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/algorithms.h"
#include "api/convert.h"
#include "common/histogram.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

constexpr double kZ95 = 1.96;

// Labels that say which suite run or sweep a run belongs to, not how it ran.
bool IsBookkeepingLabel(const std::string& key) {
  return key == "suite" || key == "suite-run" || key == "suite-profile" || key == "sweep" ||
         key == "workflow" || key == "matrix-config" || key == "schedule";
}

}  // namespace

std::string MpiName(v1::MpiImplementation mpi) { return std::string(FlavorFor(mpi).name()); }

std::string TransportName(v1::Transport transport) {
  switch (transport) {
    case v1::SHM: return "shm";
    case v1::TCP: return "tcp";
    case v1::UCX: return "ucx";
    default: return "auto";
  }
}

std::string TransportText(const v1::Run& run) {
  const std::string used = TransportName(EffectiveTransport(run));
  const std::string asked = TransportName(run.spec().transport());
  return used == asked ? used : absl::StrCat(used, " (", asked, ")");
}

std::string PlacementName(const v1::Placement& placement) {
  switch (placement.policy()) {
    case v1::SPREAD: return "spread";
    case v1::EXPLICIT: return "explicit";
    default: return "pack";
  }
}

std::vector<std::pair<std::string, std::string>> ConfigFields(const v1::Run& run) {
  const v1::RunSpec& s = run.spec();
  std::vector<std::pair<std::string, std::string>> fields = {
      {"mpi", MpiName(s.mpi())},
      {"backend", s.backend().empty() ? "mpi" : s.backend()},
      {"transport", TransportName(EffectiveTransport(run))},
      {"placement", PlacementName(s.placement())},
      {"ranks", absl::StrCat(s.ranks())},
      {"memory", s.memory().empty() ? "default" : s.memory()},
      {"sync", IterationSyncText(s.sync())},
  };
  // Maps are unordered on the wire; sort for a stable name.
  // An algorithm choice reads as one field, whichever variables made it.
  const std::string algorithm = ForcedAlgorithm(s);
  fields.emplace_back("algorithm", algorithm.empty() ? "default" : algorithm);
  const std::map<std::string, std::string> env(s.env().begin(), s.env().end());
  for (const auto& [key, value] : env) {
    if (!IsAlgorithmVariable(key)) fields.emplace_back(key, value);
  }
  const std::map<std::string, std::string> labels(s.labels().begin(), s.labels().end());
  for (const auto& [key, value] : labels) {
    if (!IsBookkeepingLabel(key)) fields.emplace_back(key, value);
  }
  return fields;
}

namespace {

// A run's configuration fields by name, its labels left out when asked.
std::map<std::string, std::string> FieldMap(const v1::Run& run, LabelFields labels) {
  std::map<std::string, std::string> fields;
  for (const auto& [key, value] : ConfigFields(run)) {
    if (labels == LabelFields::kIncluded || !run.spec().labels().contains(key)) {
      fields[key] = value;
    }
  }
  return fields;
}

}  // namespace

std::vector<std::string> VaryingConfigFields(const std::vector<const v1::Run*>& runs,
                                             LabelFields labels) {
  std::vector<std::map<std::string, std::string>> all;
  std::vector<std::string> order;  // field names in first-seen order
  std::set<std::string> seen;
  for (const v1::Run* run : runs) {
    all.push_back(FieldMap(*run, labels));
    for (const auto& [key, value] : ConfigFields(*run)) {
      if (all.back().count(key) && seen.insert(key).second) order.push_back(key);
    }
  }
  std::vector<std::string> varying;
  for (const std::string& key : order) {
    std::set<std::string> values;
    for (const auto& fields : all) {
      auto it = fields.find(key);
      values.insert(it == fields.end() ? "" : it->second);
    }
    if (values.size() > 1) varying.push_back(key);
  }
  return varying;
}

std::vector<std::string> DistinctConfigNames(const std::vector<const v1::Run*>& runs,
                                             LabelFields labels) {
  const std::vector<std::string> varying = VaryingConfigFields(runs, labels);
  std::vector<std::string> names;
  for (const v1::Run* run : runs) {
    const std::map<std::string, std::string> fields = FieldMap(*run, labels);
    std::vector<std::string> parts;
    for (const std::string& key : varying) {
      auto it = fields.find(key);
      const std::string value = it == fields.end() ? "-" : it->second;
      // Bare values read well for the spec's own fields; environment and
      // labels need their key.
      const bool spec_field = key == "mpi" || key == "backend" || key == "transport" ||
                              key == "placement" || key == "memory" || key == "algorithm";
      parts.push_back(spec_field ? value : absl::StrCat(key, "=", value));
    }
    names.push_back(parts.empty() ? run->name() : absl::StrJoin(parts, "/"));
  }
  // Distinct fields can still leave two runs alike (repeats): add the id.
  std::map<std::string, int> uses;
  for (const std::string& name : names) ++uses[name];
  for (size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] > 1) names[i] = absl::StrCat(names[i], " (", runs[i]->name(), ")");
  }
  return names;
}

std::vector<std::string> DistinctConfigNames(const std::vector<RunWithResults>& runs) {
  std::vector<const v1::Run*> pointers;
  for (const RunWithResults& r : runs) pointers.push_back(&r.run);
  return DistinctConfigNames(pointers, LabelFields::kIncluded);
}

Interval MeanInterval(const v1::SizeResult& result) {
  Interval out{result.avg_s(), result.avg_s(), false};
  const v1::Histogram& h = result.histogram();
  uint64_t n = 0;
  double sum = 0;
  for (const auto& [index, count] : h.counts()) {
    if (index < 0 || index >= Histogram::kNumBuckets) return out;
    const double mid =
        0.5 * (static_cast<double>(Histogram::LowerBound(index)) + Histogram::UpperBound(index));
    n += count;
    sum += mid * count;
  }
  if (n < 2) return out;
  const double mean = sum / n;
  double squares = 0;
  for (const auto& [index, count] : h.counts()) {
    const double mid =
        0.5 * (static_cast<double>(Histogram::LowerBound(index)) + Histogram::UpperBound(index));
    squares += (mid - mean) * (mid - mean) * count;
  }
  const double half_s = kZ95 * std::sqrt(squares / (n - 1)) / std::sqrt(static_cast<double>(n)) * 1e-9;
  out.low_s = result.avg_s() - half_s;
  out.high_s = result.avg_s() + half_s;
  out.known = true;
  return out;
}

bool Separated(const Interval& a, const Interval& b) {
  if (!a.known || !b.known) return false;
  return a.high_s < b.low_s || b.high_s < a.low_s;
}

int SignificantFastest(const std::vector<const v1::SizeResult*>& results) {
  int best = -1, second = -1;
  for (int i = 0; i < static_cast<int>(results.size()); ++i) {
    if (results[i] == nullptr) continue;
    if (best < 0 || results[i]->avg_s() < results[best]->avg_s()) {
      second = best;
      best = i;
    } else if (second < 0 || results[i]->avg_s() < results[second]->avg_s()) {
      second = i;
    }
  }
  if (second < 0) return -1;
  return Separated(MeanInterval(*results[best]), MeanInterval(*results[second])) ? best : -1;
}

}  // namespace collbench

#include "analysis/run_set.h"

#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "common/histogram.h"

namespace collbench {
namespace {

constexpr double kZ95 = 1.96;

bool IsSuiteLabel(const std::string& key) { return key == "suite" || key == "suite-run"; }

}  // namespace

std::string MpiName(v1::MpiImplementation mpi) { return mpi == v1::MPICH ? "mpich" : "openmpi"; }

std::string TransportName(v1::Transport transport) {
  switch (transport) {
    case v1::SHM: return "shm";
    case v1::TCP: return "tcp";
    case v1::UCX: return "ucx";
    default: return "auto";
  }
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
      {"transport", TransportName(s.transport())},
      {"placement", PlacementName(s.placement())},
      {"ranks", absl::StrCat(s.ranks())},
      {"memory", s.memory().empty() ? "default" : s.memory()},
      {"sync", IterationSyncText(s.sync())},
  };
  // Maps are unordered on the wire; sort for a stable name.
  const std::map<std::string, std::string> env(s.env().begin(), s.env().end());
  for (const auto& [key, value] : env) fields.emplace_back(key, value);
  const std::map<std::string, std::string> labels(s.labels().begin(), s.labels().end());
  for (const auto& [key, value] : labels) {
    if (!IsSuiteLabel(key)) fields.emplace_back(key, value);
  }
  return fields;
}

std::vector<std::string> DistinctConfigNames(const std::vector<RunWithResults>& runs) {
  std::vector<std::map<std::string, std::string>> all;
  std::vector<std::string> order;  // field names in first-seen order
  std::set<std::string> seen;
  for (const RunWithResults& r : runs) {
    all.emplace_back();
    for (const auto& [key, value] : ConfigFields(r.run)) {
      all.back()[key] = value;
      if (seen.insert(key).second) order.push_back(key);
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
  std::vector<std::string> names;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::string> parts;
    for (const std::string& key : varying) {
      auto it = all[i].find(key);
      const std::string value = it == all[i].end() ? "-" : it->second;
      // Bare values read well for the spec's own fields; environment and
      // labels need their key.
      const bool spec_field = key == "mpi" || key == "backend" || key == "transport" ||
                              key == "placement" || key == "memory";
      parts.push_back(spec_field ? value : absl::StrCat(key, "=", value));
    }
    names.push_back(parts.empty() ? runs[i].run.name() : absl::StrJoin(parts, "/"));
  }
  // Distinct fields can still leave two runs alike (repeats): add the id.
  std::map<std::string, int> uses;
  for (const std::string& name : names) ++uses[name];
  for (size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] > 1) names[i] = absl::StrCat(names[i], " (", runs[i].run.name(), ")");
  }
  return names;
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

}  // namespace collbench

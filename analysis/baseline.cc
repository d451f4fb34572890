// SPDX-License-Identifier: Apache-2.0
#include "analysis/baseline.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"

namespace collbench {
namespace {

// The workers' class: their `class` labels (an operator's name for the
// hardware, e.g. an instance type), sorted and joined; "" when none has one.
std::string WorkerClass(const v1::Run& run) {
  std::set<std::string> classes;
  for (const v1::RankHost& host : run.hosts()) {
    auto it = host.worker_labels().find("class");
    if (it != host.worker_labels().end()) classes.insert(it->second);
  }
  return absl::StrJoin(classes, "+");
}

std::string Workers(const v1::Run& run) {
  std::vector<std::string> names;
  for (const v1::RankHost& host : run.hosts()) names.push_back(host.worker());
  std::sort(names.begin(), names.end());
  return absl::StrJoin(names, ",");
}

// Keys in reading order: field by field, sizes by number (8 before 1K).
struct KeyOrder {
  bool operator()(const ConfigKey& a, const ConfigKey& b) const {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i] == b[i]) continue;
      if (a[i].first == "bytes" && b[i].first == "bytes" &&
          a[i].second.size() != b[i].second.size()) {
        return a[i].second.size() < b[i].second.size();  // decimal digits, no leading zeros
      }
      return a[i] < b[i];
    }
    return a.size() < b.size();
  }
};

struct Merged {
  Histogram histogram;
  const v1::Run* run = nullptr;
  int results = 0;
};

// Every result of `runs` with a histogram, merged per configuration.
std::map<ConfigKey, Merged, KeyOrder> MergeByKey(const std::vector<RunWithResults>& runs) {
  std::map<ConfigKey, Merged, KeyOrder> merged;
  for (const RunWithResults& r : runs) {
    if (r.run.state() != v1::SUCCEEDED) continue;
    for (const v1::SizeResult& result : r.results) {
      if (!result.has_histogram()) continue;
      absl::StatusOr<Histogram> h = HistogramFromProto(result.histogram());
      if (!h.ok() || h->count() == 0) continue;
      Merged& m = merged[KeyOf(r.run, result)];
      m.histogram.Merge(*h);
      if (m.run == nullptr) m.run = &r.run;
      ++m.results;
    }
  }
  return merged;
}

}  // namespace

ConfigKey KeyOf(const v1::Run& run, const v1::SizeResult& result) {
  const v1::RunSpec& s = run.spec();
  ConfigKey key = {
      {"operation", result.operation().empty() ? s.operation() : result.operation()},
      {"bytes", absl::StrCat(result.bytes())},
      {"dtype", result.dtype()},
      {"redop", result.redop()},
      {"root", absl::StrCat(result.root())},
      {"in_place", s.in_place() ? "true" : "false"},
  };
  for (auto& field : ConfigFields(run)) {
    // Labels file runs; they do not change what was measured.
    if (s.labels().contains(field.first)) continue;
    key.push_back(std::move(field));
  }
  key.emplace_back("class", WorkerClass(run));
  return key;
}

std::string KeyText(const ConfigKey& key) {
  std::vector<std::string> parts;
  for (const auto& [field, value] : key) {
    if (value.empty() || value == "default" || value == "none") continue;
    parts.push_back(field == "operation" || field == "dtype" || field == "mpi" ||
                            field == "backend" || field == "transport" || field == "placement"
                        ? value
                        : absl::StrCat(field, "=", value));
  }
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<std::vector<BaselineEntry>> BaselineFrom(const std::vector<RunWithResults>& runs) {
  std::vector<BaselineEntry> entries;
  for (auto& [key, merged] : MergeByKey(runs)) {
    v1::Run run = *merged.run;
    entries.push_back({key, merged.histogram, std::move(run), merged.results});
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(
        "no successful run with stored histograms to keep as a baseline");
  }
  return entries;
}

CheckResult Check(const std::vector<BaselineEntry>& baseline,
                  const std::vector<RunWithResults>& candidate, const CompareOptions& options) {
  CheckResult out;
  const std::map<ConfigKey, Merged, KeyOrder> now = MergeByKey(candidate);
  std::set<ConfigKey> seen;
  for (const BaselineEntry& entry : baseline) {
    auto it = now.find(entry.key);
    if (it == now.end()) {
      out.only_baseline.push_back(entry.key);
      continue;
    }
    seen.insert(entry.key);
    absl::StatusOr<Comparison> c = CompareHistograms(entry.histogram, it->second.histogram, options);
    if (!c.ok()) continue;  // both sides have samples: cannot happen
    CheckRow row{entry.key, *c, entry.run.name(), it->second.run->name(),
                 EnvironmentDifferences(entry.run, *it->second.run)};
    out.regressed = out.regressed || c->verdict == "regression";
    out.rows.push_back(std::move(row));
  }
  for (const auto& [key, merged] : now) {
    if (!seen.count(key)) out.only_candidate.push_back(key);
  }
  return out;
}

std::vector<std::string> EnvironmentDifferences(const v1::Run& baseline,
                                                const v1::Run& candidate) {
  std::vector<std::string> out;
  auto differ = [&](const std::string& what, const std::string& then, const std::string& now) {
    if (then != now) {
      out.push_back(absl::StrCat(what, ": ", then.empty() ? "(none)" : then, " -> ",
                                 now.empty() ? "(none)" : now));
    }
  };
  differ("mpi_version", baseline.mpi_version(), candidate.mpi_version());
  differ("nccl_version", baseline.nccl_version(), candidate.nccl_version());
  differ("environment_fingerprint", baseline.environment_fingerprint(),
         candidate.environment_fingerprint());
  differ("workers", Workers(baseline), Workers(candidate));
  return out;
}

}  // namespace collbench

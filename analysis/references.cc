// SPDX-License-Identifier: Apache-2.0
#include "analysis/references.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine_spec/backends.h"
#include "engine_spec/memory_kinds.h"

namespace collbench {
namespace {

constexpr double kGB = 1e9;  // nccl-tests' GB/s
constexpr double kLowFraction = 0.9;

using Json = nlohmann::json;

absl::Status Bad(size_t index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("references entry ", index, ": ", what));
}

// A positive number, or absent/null (0).
absl::StatusOr<double> OptionalPositive(const Json& object, const char* key, size_t index) {
  if (!object.contains(key) || object[key].is_null()) return 0.0;
  if (!object[key].is_number() || !(object[key].get<double>() > 0)) {
    return Bad(index, absl::StrCat("'", key, "' must be a positive number or null"));
  }
  return object[key].get<double>();
}

std::string OptionalString(const Json& object, const char* key) {
  if (!object.contains(key) || !object[key].is_string()) return "";
  return object[key].get<std::string>();
}

// The model as a word of the GPU's name: "H100" in "NVIDIA H100 80GB HBM3"
// and "NVIDIA A100-SXM4-80GB", not in "NVIDIA GH100".
bool ModelMatches(absl::string_view name, absl::string_view model) {
  for (absl::string_view word : absl::StrSplit(name, absl::ByAnyChar(" -_/"), absl::SkipEmpty())) {
    if (absl::EqualsIgnoreCase(word, model)) return true;
  }
  return false;
}

bool OneHostInterconnect(absl::string_view interconnect) {
  return absl::StrContains(interconnect, "NVLink") ||
         absl::StrContains(interconnect, "Infinity Fabric");
}

bool Matches(const ReferenceEntry& entry, const RunClass& run, absl::string_view operation) {
  if (entry.operation != operation) return false;
  if (!entry.busbw) {
    static const std::set<std::string> kBusIsAlg = {"bw", "h2d", "d2h", "d2d", "h2h", "bcast",
                                                    "reduce"};
    if (kBusIsAlg.count(std::string(operation)) == 0) return false;
  }
  if (entry.gpu.empty()) {
    if (run.on_gpu) return false;
  } else {
    if (!run.on_gpu || !ModelMatches(run.gpu, entry.gpu)) return false;
  }
  if (entry.gpus > 0 && entry.gpus != run.gpus) return false;
  if (absl::StrContains(entry.interconnect, "NVLink/SHM off")) {
    // Measured with NCCL kept off NVLink and shared memory on one node: a
    // run that does the same, wherever it runs.
    if (!run.nics_only || !run.rdma) return false;
  } else if (absl::StrContains(entry.interconnect, "InfiniBand")) {
    if (run.hosts < 2 || !run.rdma) return false;
  } else if (absl::StrContains(entry.interconnect, "multi-node")) {
    // An NVLink domain across hosts (NVL72): any host count.
  } else if (OneHostInterconnect(entry.interconnect)) {
    if (run.hosts != 1) return false;
  }
  const bool nvls = absl::StrContains(entry.interconnect, "(NVLS)");
  const bool nvls_off = absl::StrContains(entry.interconnect, "(NVLS off)");
  if (nvls && (!run.nccl || run.nvls_off || operation != "allreduce")) return false;
  if (nvls_off && !run.nvls_off) return false;
  return true;
}

std::string ClassText(const ReferenceEntry& entry) {
  std::string text;
  if (!entry.gpu.empty()) {
    text = entry.gpus > 0 ? absl::StrCat(entry.gpus, "x ", entry.gpu) : entry.gpu;
  }
  for (const std::string& part : {entry.interconnect, entry.nic}) {
    if (part.empty()) continue;
    absl::StrAppend(&text, text.empty() ? "" : ", ", part);
  }
  return text;
}

// The value at `bytes` of points (size, value) sorted by size: none below
// the first, interpolated on log(size) between two, the last above.
double Interpolate(const std::vector<std::pair<uint64_t, double>>& points, uint64_t bytes) {
  if (points.empty() || bytes < points.front().first) return 0;
  for (size_t i = 1; i < points.size(); ++i) {
    if (bytes >= points[i].first) continue;
    const auto& [x0, y0] = points[i - 1];
    const auto& [x1, y1] = points[i];
    const double t = (std::log(static_cast<double>(bytes)) - std::log(static_cast<double>(x0))) /
                     (std::log(static_cast<double>(x1)) - std::log(static_cast<double>(x0)));
    return y0 + t * (y1 - y0);
  }
  return points.back().second;
}

// Per size, the highest of each entry's figure (value or floor).
std::vector<std::pair<uint64_t, double>> Points(const std::vector<const ReferenceEntry*>& entries,
                                                double ReferenceEntry::*field) {
  std::map<uint64_t, double> best;
  for (const ReferenceEntry* entry : entries) {
    if (entry->*field <= 0) continue;
    double& value = best[entry->at_bytes];
    value = std::max(value, entry->*field);
  }
  return {best.begin(), best.end()};
}

}  // namespace

absl::StatusOr<ReferenceTable> ReferenceTable::Parse(absl::string_view text) {
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError("references: not a JSON object");
  }
  if (!json.contains("version") || json["version"] != 1) {
    return absl::InvalidArgumentError("references: 'version' must be 1");
  }
  if (!json.contains("entries") || !json["entries"].is_array()) {
    return absl::InvalidArgumentError("references: 'entries' must be an array");
  }
  ReferenceTable table;
  size_t index = 0;
  for (const Json& item : json["entries"]) {
    if (!item.is_object() || !item.contains("class") || !item["class"].is_object()) {
      return Bad(index, "'class' must be an object");
    }
    const Json& cls = item["class"];
    ReferenceEntry entry;
    entry.gpu = OptionalString(cls, "gpu");
    if (cls.contains("gpus") && cls["gpus"].is_number_integer()) entry.gpus = cls["gpus"].get<int>();
    entry.interconnect = OptionalString(cls, "interconnect");
    entry.nic = OptionalString(cls, "nic");
    entry.operation = OptionalString(item, "operation");
    if (entry.operation.empty()) return Bad(index, "'operation' is missing");
    const std::string metric = OptionalString(item, "metric");
    if (metric != "busbw_GBps" && metric != "algbw_GBps") {
      return Bad(index, "'metric' must be busbw_GBps or algbw_GBps");
    }
    entry.busbw = metric == "busbw_GBps";
    absl::StatusOr<double> value = OptionalPositive(item, "value", index);
    if (!value.ok()) return value.status();
    absl::StatusOr<double> floor = OptionalPositive(item, "floor", index);
    if (!floor.ok()) return floor.status();
    entry.value = *value * kGB;
    entry.floor = *floor * kGB;
    if (entry.value == 0 && item.contains("range") && item["range"].is_array() &&
        !item["range"].empty() && item["range"][0].is_number()) {
      entry.value = item["range"][0].get<double>() * kGB;  // the range's low end
    }
    if (entry.value == 0 && entry.floor == 0) return Bad(index, "neither a value, a range nor a floor");
    absl::StatusOr<double> at = OptionalPositive(item, "at_bytes", index);
    if (!at.ok()) return at.status();
    entry.at_bytes = static_cast<uint64_t>(*at);
    if (!item.contains("source") || !item["source"].is_object()) return Bad(index, "no 'source'");
    entry.source_url = OptionalString(item["source"], "url");
    entry.source_title = OptionalString(item["source"], "title");
    if (!absl::StartsWith(entry.source_url, "https://") && !absl::StartsWith(entry.source_url, "http://")) {
      return Bad(index, "'source.url' must be an http(s) URL");
    }
    table.entries_.push_back(std::move(entry));
    ++index;
  }
  return table;
}

ReferenceTable ReferenceTable::With(const ReferenceTable& more) const {
  ReferenceTable both = *this;
  both.entries_.insert(both.entries_.end(), more.entries_.begin(), more.entries_.end());
  return both;
}

const ReferenceTable& ReferenceTable::Embedded() {
  static const ReferenceTable* table = [] {
    absl::StatusOr<ReferenceTable> parsed = Parse(EmbeddedReferencesJson());
    return new ReferenceTable(parsed.ok() ? *std::move(parsed) : ReferenceTable());
  }();
  return *table;
}

std::optional<Expected> ReferenceTable::Lookup(const RunClass& run, absl::string_view operation,
                                               uint64_t bytes) const {
  std::vector<const ReferenceEntry*> matching;
  for (const ReferenceEntry& entry : entries_) {
    if (entry.at_bytes > 0 && Matches(entry, run, operation)) matching.push_back(&entry);
  }
  if (matching.empty()) return std::nullopt;
  Expected expected;
  expected.value_bytes_per_s = Interpolate(Points(matching, &ReferenceEntry::value), bytes);
  expected.floor_bytes_per_s = Interpolate(Points(matching, &ReferenceEntry::floor), bytes);
  if (expected.value_bytes_per_s <= 0 && expected.floor_bytes_per_s <= 0) return std::nullopt;
  // The class and source of the entry published closest below the size.
  const ReferenceEntry* nearest = nullptr;
  for (const ReferenceEntry* entry : matching) {
    if (entry->at_bytes > bytes) continue;
    if (nearest == nullptr || entry->at_bytes > nearest->at_bytes ||
        (entry->at_bytes == nearest->at_bytes && entry->value > nearest->value)) {
      nearest = entry;
    }
  }
  expected.class_text = ClassText(*nearest);
  expected.source_url = nearest->source_url;
  return expected;
}

RunClass RunClassOf(const v1::Run& run,
                    const std::function<const v1::Inventory*(const std::string& worker)>& inventory) {
  RunClass cls;
  const std::string backend = run.spec().backend().empty() ? "mpi" : run.spec().backend();
  const std::string& operation = run.spec().operation();
  const bool copy = operation == "h2d" || operation == "d2h" || operation == "d2d";
  cls.nccl = backend == "nccl";
  const BackendSpec* backend_spec = FindBackendSpec(backend);
  cls.on_gpu = (backend_spec != nullptr && backend_spec->space == MemorySpace::kDevice) ||
               run.spec().memory() == "device" || copy;
  std::map<std::string, int> ranks_on;  // per host
  bool every_rdma = run.hosts_size() > 0;
  for (const v1::RankHost& host : run.hosts()) {
    ranks_on[host.host_id().empty() ? host.worker() : host.host_id()] += host.slots();
    const v1::Inventory* worker = inventory(host.worker());
    if (worker == nullptr || worker->rdma_devices_size() == 0) every_rdma = false;
    if (worker != nullptr && cls.gpu.empty() && worker->gpus_size() > 0) cls.gpu = worker->gpus(0).name();
  }
  cls.hosts = static_cast<int>(ranks_on.size());
  cls.rdma = every_rdma;
  int per_host = 0;
  for (const auto& [host, ranks] : ranks_on) per_host = std::max(per_host, ranks);
  cls.gpus = copy ? 1 : (per_host > 0 ? per_host : run.spec().ranks());
  const auto& env = run.spec().env();
  const auto nvls = env.find("NCCL_NVLS_ENABLE");
  const auto algo = env.find("NCCL_ALGO");
  auto set = [&env](const char* key) {
    auto it = env.find(key);
    return it != env.end() && it->second == "1";
  };
  cls.nics_only = set("NCCL_P2P_DISABLE") && set("NCCL_SHM_DISABLE");
  cls.nvls_off = (nvls != env.end() && nvls->second == "0") ||
                 (algo != env.end() && !absl::StrContains(absl::AsciiStrToUpper(algo->second), "NVLS"));
  return cls;
}

std::string ExpectedVerdict(double busbw_bytes_per_s, const Expected& expected) {
  if (expected.floor_bytes_per_s > 0 && busbw_bytes_per_s < expected.floor_bytes_per_s) {
    return "below-floor";
  }
  if (expected.value_bytes_per_s > 0 && busbw_bytes_per_s < kLowFraction * expected.value_bytes_per_s) {
    return "low";
  }
  return "ok";
}

v1::ResultReferences ReferencesOf(const PathFacts& path, const RunClass& run_class,
                                  const v1::SizeResult& result, const ReferenceTable& table) {
  v1::ResultReferences references;
  const double busbw = result.busbw_bytes_per_s();
  if (std::optional<Limit> limit = PathLimit(path, result.operation());
      limit.has_value() && limit->busbw_bytes_per_s > 0) {
    references.set_limit_busbw_bytes_per_s(limit->busbw_bytes_per_s);
    references.set_limit_path(limit->derivation);
    if (busbw > 0) references.set_limit_ratio(busbw / limit->busbw_bytes_per_s);
  }
  if (std::optional<Expected> expected = table.Lookup(run_class, result.operation(), result.bytes());
      expected.has_value()) {
    references.set_expected_busbw_bytes_per_s(expected->value_bytes_per_s);
    references.set_expected_floor_bytes_per_s(expected->floor_bytes_per_s);
    const double against =
        expected->value_bytes_per_s > 0 ? expected->value_bytes_per_s : expected->floor_bytes_per_s;
    if (busbw > 0) references.set_expected_ratio(busbw / against);
    references.set_expected_class(expected->class_text);
    references.set_expected_source(expected->source_url);
    if (busbw > 0) references.set_expected_verdict(ExpectedVerdict(busbw, *expected));
  }
  return references;
}

}  // namespace collbench

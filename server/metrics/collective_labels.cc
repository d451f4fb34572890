// SPDX-License-Identifier: Apache-2.0
#include "server/metrics/collective_labels.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/convert.h"
#include "common/worker_labels.h"
#include "engine_spec/operations.h"
#include "engine_spec/types.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

constexpr size_t kMaxRunLabelKeyChars = 63;  // as the API accepts them

std::string Lower(absl::string_view text) { return absl::AsciiStrToLower(text); }

bool RunLabelKeyChar(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '_' || c == '-';
}

std::string TransportLabel(v1::Transport transport) {
  return transport == v1::TRANSPORT_UNSPECIFIED ? "auto" : Lower(v1::Transport_Name(transport));
}

std::string PlacementLabel(const v1::Placement& placement) {
  return placement.policy() == v1::PLACEMENT_POLICY_UNSPECIFIED
             ? "pack"
             : Lower(v1::PlacementPolicy_Name(placement.policy()));
}

// How the result's iterations were separated: the result's own field,
// else the stored spec's (resolved at create), else "unknown" for results
// of engines older than the field.
std::string SyncLabel(const v1::RunSpec& spec, const v1::SizeResult& result) {
  const v1::IterationSync sync =
      result.sync() != v1::ITERATION_SYNC_UNSPECIFIED ? result.sync() : spec.sync();
  const std::string text = IterationSyncText(sync);
  return text.empty() ? "unknown" : text;
}

std::string DtypeLabel(const std::string& operation, const v1::RunSpec& spec,
                       const v1::SizeResult& result) {
  if (!result.dtype().empty()) return Lower(result.dtype());
  if (!spec.dtype().empty()) return Lower(spec.dtype());
  return std::string(DataTypeName(DefaultDataType(operation)));
}

// The forced algorithm and the rest of the tuning environment, so that
// runs of one spec under different settings stay apart.
std::pair<std::string, std::string> EnvironmentLabels(const v1::RunSpec& spec) {
  const MpiFlavor& flavor = FlavorFor(spec.mpi());
  const EnvMap env(spec.env().begin(), spec.env().end());
  const std::string algorithm = flavor.ForcedAlgorithm(spec.operation(), env);
  std::vector<std::string> rest;
  for (const auto& [key, value] : env) {
    if (!flavor.IsAlgorithmVariable(key)) rest.push_back(absl::StrCat(key, "=", value));
  }
  return {algorithm.empty() ? "default" : Lower(algorithm), absl::StrJoin(rest, ",")};
}

}  // namespace

absl::Status ValidateCollectiveLabelOptions(const CollectiveLabelOptions& options) {
  std::map<std::string, std::string> names;  // label name -> key
  for (const std::string& key : options.run_labels) {
    if (key.empty() || key.size() > kMaxRunLabelKeyChars ||
        !std::all_of(key.begin(), key.end(), RunLabelKeyChar)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid --metric-run-labels key '", absl::CHexEscape(key), "': a run ",
                       "label key is 1-", kMaxRunLabelKeyChars, " characters of [a-z0-9_-]"));
    }
    auto [it, added] = names.emplace(RunLabelName(key), key);
    if (!added) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid --metric-run-labels: '", it->second, "' and '", key,
          it->second == key ? "' are the same key" : "' are both the metric label ",
          it->second == key ? "" : it->first));
    }
  }
  if (!options.pool_label.empty()) {
    if (absl::Status valid = ValidateWorkerLabel(options.pool_label, "x"); !valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid --metric-pool-label: ", valid.message()));
    }
  }
  return absl::OkStatus();
}

std::string RunLabelName(absl::string_view key) {
  std::string name = absl::StrCat("label_", key);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string SanitizeLabelValue(absl::string_view value) {
  std::string out(value.substr(0, kMaxRunLabelValueChars));
  for (char& c : out) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return out;
}

std::string RunPool(const v1::Run& run, absl::string_view pool_label) {
  if (pool_label.empty()) return "";
  std::set<std::string> pools;
  for (const v1::RankHost& host : run.hosts()) {
    auto it = host.worker_labels().find(std::string(pool_label));
    pools.insert(it == host.worker_labels().end() ? "" : it->second);
  }
  if (pools.size() > 1) return "mixed";
  return pools.empty() ? "" : *pools.begin();
}

std::string BoundedCountLabel(uint64_t value) {
  if (value <= kExactCountLabels) return std::to_string(value);
  constexpr uint64_t kTop = uint64_t{1} << 63;
  if (value > kTop) return std::to_string(kTop);
  uint64_t edge = kExactCountLabels;
  while (edge < value) edge <<= 1;
  return std::to_string(edge);
}

MetricLabels ResultFieldLabels(const v1::RunSpec& spec, const v1::SizeResult& result) {
  const std::string operation = result.operation().empty() ? spec.operation() : result.operation();
  absl::StatusOr<const OperationSpec*> op = FindOperationSpec(operation);
  const bool rooted = op.ok() && (*op)->traits.rooted;
  const bool reduces = op.ok() && (*op)->traits.reduces;
  const std::string redop = !result.redop().empty() ? result.redop() : spec.redop();
  const int32_t root = result.root() != 0 ? result.root() : spec.root();
  return MetricLabels{
      {"operation", operation},
      {"size_bytes", BoundedCountLabel(result.bytes())},
      {"dtype", DtypeLabel(operation, spec, result)},
      {"redop", !reduces        ? "none"
                : redop.empty() ? "sum"
                                : Lower(redop)},
      {"root", rooted ? BoundedCountLabel(static_cast<uint64_t>(std::max(root, 0))) : "none"},
      {"sync", SyncLabel(spec, result)},
  };
}

MetricLabels ConfigurationLabels(const v1::RunSpec& spec, const v1::SizeResult& result) {
  auto [algorithm, env] = EnvironmentLabels(spec);
  MetricLabels labels{
      {"backend", spec.backend().empty() ? "mpi" : Lower(spec.backend())},
      {"mpi", std::string(FlavorFor(spec.mpi()).name())},
      {"transport", TransportLabel(spec.transport())},
      {"placement", PlacementLabel(spec.placement())},
      {"ranks", BoundedCountLabel(static_cast<uint64_t>(std::max(spec.ranks(), 0)))},
      {"memory", spec.memory().empty() ? "default" : Lower(spec.memory())},
      {"in_place", spec.in_place() ? "true" : "false"},
      {"algorithm", std::move(algorithm)},
      {"env", std::move(env)},
  };
  labels.merge(ResultFieldLabels(spec, result));
  return labels;
}

CollectiveLabeler::CollectiveLabeler(CollectiveLabelOptions options)
    : options_(std::move(options)) {}

MetricLabels CollectiveLabeler::ConfigurationOf(const v1::RunSpec& spec,
                                                const std::string& pool) const {
  MetricLabels labels = ConfigurationLabels(spec, v1::SizeResult());
  labels["env"] = FoldedValue("env", std::move(labels["env"]), kMaxEnvLabelValues);
  if (!options_.pool_label.empty()) labels["pool"] = pool;
  for (const std::string& key : options_.run_labels) {
    auto it = spec.labels().find(key);
    const std::string name = RunLabelName(key);
    labels[name] = it == spec.labels().end()
                       ? ""
                       : FoldedValue(name, SanitizeLabelValue(it->second), kMaxRunLabelValues);
  }
  return labels;
}

std::string CollectiveLabeler::FoldedValue(const std::string& label, std::string value,
                                           int bound) const {
  if (value.empty()) return value;
  auto held = held_.find(label);
  if (held == held_.end() || held->second.count(value) > 0 ||
      static_cast<int>(held->second.size()) < bound) {
    return value;
  }
  return "other";
}

void CollectiveLabeler::Hold(const MetricLabels& configuration) {
  for (const auto& [name, value] : configuration) {
    if (name != "env" && !absl::StartsWith(name, "label_")) continue;
    if (!value.empty() && value != "other") ++held_[name][value];
  }
}

void CollectiveLabeler::Release(const MetricLabels& configuration) {
  for (const auto& [name, value] : configuration) {
    auto held = held_.find(name);
    if (held == held_.end()) continue;
    auto it = held->second.find(value);
    if (it != held->second.end() && --it->second == 0) held->second.erase(it);
  }
}

}  // namespace collbench

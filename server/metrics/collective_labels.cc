// SPDX-License-Identifier: Apache-2.0
#include "server/metrics/collective_labels.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
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

MetricLabels ConfigurationLabels(const v1::RunSpec& spec, const v1::SizeResult& result) {
  const std::string operation = result.operation().empty() ? spec.operation() : result.operation();
  absl::StatusOr<const OperationSpec*> op = FindOperationSpec(operation);
  const bool rooted = op.ok() && (*op)->traits.rooted;
  const bool reduces = op.ok() && (*op)->traits.reduces;
  const std::string redop = !result.redop().empty() ? result.redop() : spec.redop();
  auto [algorithm, env] = EnvironmentLabels(spec);
  return MetricLabels{
      {"operation", operation},
      {"backend", spec.backend().empty() ? "mpi" : Lower(spec.backend())},
      {"mpi", std::string(FlavorFor(spec.mpi()).name())},
      {"transport", TransportLabel(spec.transport())},
      {"placement", PlacementLabel(spec.placement())},
      {"ranks", std::to_string(spec.ranks())},
      {"size_bytes", std::to_string(result.bytes())},
      {"dtype", DtypeLabel(operation, spec, result)},
      {"redop", !reduces ? "none" : redop.empty() ? "sum" : Lower(redop)},
      {"root", rooted ? std::to_string(result.root() != 0 ? result.root() : spec.root()) : "none"},
      {"memory", spec.memory().empty() ? "default" : Lower(spec.memory())},
      {"sync", SyncLabel(spec, result)},
      {"in_place", spec.in_place() ? "true" : "false"},
      {"algorithm", std::move(algorithm)},
      {"env", std::move(env)},
  };
}

CollectiveLabeler::CollectiveLabeler(CollectiveLabelOptions options)
    : options_(std::move(options)) {}

MetricLabels CollectiveLabeler::Labels(const v1::RunSpec& spec, const std::string& pool,
                                       const v1::SizeResult& result) {
  MetricLabels labels = ConfigurationLabels(spec, result);
  if (!options_.pool_label.empty()) labels["pool"] = pool;
  for (const std::string& key : options_.run_labels) {
    auto it = spec.labels().find(key);
    labels[RunLabelName(key)] =
        it == spec.labels().end() ? "" : RunLabelValue(key, it->second);
  }
  return labels;
}

std::string CollectiveLabeler::RunLabelValue(const std::string& key, absl::string_view raw) {
  std::string value = SanitizeLabelValue(raw);
  std::set<std::string>& seen = run_label_values_[key];
  if (seen.count(value) > 0) return value;
  if (static_cast<int>(seen.size()) >= kMaxRunLabelValues) return "other";
  seen.insert(value);
  return value;
}

}  // namespace collbench

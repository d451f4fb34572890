// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/scenarios.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine_spec/backends.h"
#include "engine_spec/models.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

constexpr uint64_t kMaxMpiCount = std::numeric_limits<int>::max();

std::optional<RuleError> SixteenBitNeeds(const EngineOptions& options, bool carried,
                                         absl::string_view what) {
  if (!IsNcclOnly(options.dtype) || carried) return std::nullopt;
  return Broken(Setting::kDtype, absl::StrCat(DataTypeName(options.dtype), " needs ", what,
                                              " (MPI has no 16-bit float type)"));
}

// The largest size against MPI's int count limit.
std::optional<RuleError> CheckIntCount(const EngineOptions& options, const StrategySpec& strategy,
                                       int nranks) {
  const size_t width = ElementSize(options.dtype);
  // MPI counts are ints; the nccl-chief link sends every worker's bytes.
  const uint64_t max_bytes = strategy.strategy == Strategy::kNcclChief
                                 ? kMaxMpiCount / static_cast<uint64_t>(nranks - 1)
                                 : kMaxMpiCount * width;
  const std::vector<uint64_t> sizes = SweepSizes(options);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= max_bytes) continue;
    const bool listed = !options.sizes_bytes.empty();
    return RuleError{listed ? Setting::kSizes : Setting::kMaxBytes,
                     listed ? static_cast<int>(i) : -1,
                     absl::StrCat(sizes[i], " bytes exceeds MPI's int count limit for strategy ",
                                  strategy.name, " with ", nranks - 1, " workers")};
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& ScenarioNames() {
  static const auto* names = new std::vector<std::string>{kParameterServer, kGradientReplay};
  return *names;
}

bool IsScenario(absl::string_view name) {
  const std::vector<std::string>& names = ScenarioNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<RuleError> ParameterServerRules(const EngineOptions& options, int nranks) {
  if (nranks < 2) {
    return Broken(Setting::kRanks,
                  absl::StrCat("parameter-server needs at least 2 ranks (rank 0 is the parameter "
                               "server, the others are workers), got ",
                               nranks));
  }
  absl::StatusOr<const StrategySpec*> strategy =
      ResolveStrategy(options.strategy, options.backend);
  if (!strategy.ok()) {
    return RuleErrorFrom(options.strategy.empty() ? Setting::kBackend : Setting::kStrategy,
                         strategy.status());
  }
  if (std::optional<RuleError> e = SixteenBitNeeds(
          options, (*strategy)->strategy == Strategy::kNcclChief, "strategy nccl-chief")) {
    return e;
  }
  if (SweepSizes(options).empty()) {
    return Broken(Setting::kMinBytes, "..--max-bytes / --sizes give no size");
  }
  if (std::optional<RuleError> e = CheckElementWidth(options)) return e;
  return CheckIntCount(options, **strategy, nranks);
}

std::optional<RuleError> GradientReplayRules(const EngineOptions& options, int nranks) {
  if (nranks < 1) return Broken(Setting::kRanks, "gradient-replay needs at least 1 rank");
  absl::StatusOr<ModelGradients> model = LoadModel(options.model);
  if (!model.ok()) return RuleErrorFrom(Setting::kModel, model.status());
  if (options.bucket_bytes == 0) {
    return Broken(Setting::kBucketBytes, "must be positive (DDP's default is 25M)");
  }
  const size_t width = ElementSize(options.dtype);
  const bool nccl = options.backend == kNcclBackend;
  for (uint64_t bytes : ModelBucketBytes(*model, options.bucket_bytes, width)) {
    if (!nccl && bytes / width > kMaxMpiCount) {
      return Broken(Setting::kModel,
                    absl::StrCat("a bucket of ", bytes / width,
                                 " elements exceeds MPI's int count limit; use smaller tensors"));
    }
  }
  if (options.steps < 0) {
    return Broken(Setting::kSteps, absl::StrCat("must be positive, got ", options.steps));
  }
  if (options.compute_time_s.has_value() && *options.compute_time_s < 0) {
    return Broken(Setting::kComputeTime, "must not be negative");
  }
  if (!options.strategy.empty()) {
    return Broken(Setting::kStrategy,
                  "applies to scenario parameter-server only; gradient-replay uses the backend");
  }
  if (std::optional<RuleError> e = SixteenBitNeeds(options, nccl, "backend nccl")) return e;
  if (options.check) {
    if (absl::Status s = CheckReductionExact(options.dtype, ReduceOp::kSum, nranks); !s.ok()) {
      return RuleErrorFrom(Setting::kCheck, s);
    }
  }
  return std::nullopt;
}

std::optional<RuleError> ScenarioRules(const EngineOptions& options, int nranks) {
  if (options.in_place) {
    return Broken(Setting::kInPlace,
                  absl::StrCat("does not apply to scenario ", options.scenario,
                               ": it chooses its own buffers"));
  }
  return options.scenario == kParameterServer ? ParameterServerRules(options, nranks)
                                              : GradientReplayRules(options, nranks);
}

absl::Status ValidateParameterServer(const EngineOptions& options, int nranks) {
  std::optional<RuleError> broken = ScenarioRules(options, nranks);
  return broken ? EngineError(*broken) : absl::OkStatus();
}

absl::Status ValidateGradientReplay(const EngineOptions& options, int nranks) {
  std::optional<RuleError> broken = ScenarioRules(options, nranks);
  return broken ? EngineError(*broken) : absl::OkStatus();
}

}  // namespace collbench

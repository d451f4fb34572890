// SPDX-License-Identifier: Apache-2.0
// ValidateRunSpec: one small check per concern, run in the order of
// kChecks over a Context that resolves the spec's names once. This file
// holds the resolution, the ranges of the fields collbench-rank takes and
// CheckEngineRules, which turns the spec into engine options and asks
// engine_spec's rules (the same collbench-rank asks); validation_job.cc the
// service's own checks.
#include "api/validation.h"

#include "api/capabilities.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "api/convert.h"
#include "api/validation_checks.h"
#include "common/units.h"
#include "engine_spec/backends.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/memory_kinds.h"
#include "engine_spec/operations.h"
#include "engine_spec/options.h"
#include "engine_spec/scenarios.h"
#include "engine_spec/types.h"

namespace collbench::validation_internal {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kMaxDurationSeconds = 315'576'000'000;  // protobuf's bound
template <typename Range>
bool Contains(const Range& names, absl::string_view name) {
  return std::any_of(std::begin(names), std::end(names),
                     [&](absl::string_view n) { return n == name; });
}

// `operation` names the operation or scenario run: without a dtype the
// engine measures its DefaultDataType.
std::vector<DataType> ResolveDataTypes(absl::string_view name, absl::string_view operation,
                                       const BackendSpec* backend) {
  if (name.empty()) return {DefaultDataType(operation)};
  if (name != "all") {
    absl::StatusOr<DataType> t = ParseDataType(name);
    return t.ok() ? std::vector<DataType>{*t} : std::vector<DataType>{};
  }
  std::vector<DataType> all;
  const bool nccl = backend != nullptr && backend->name == absl::string_view(kNcclBackend);
  for (DataType t : AllDataTypes()) {
    if (nccl || !IsNcclOnly(t)) all.push_back(t);
  }
  return all;
}

std::vector<ReduceOp> ResolveReduceOps(absl::string_view name) {
  if (name.empty()) return {ReduceOp::kSum};
  if (name == "all") return AllReduceOps();
  absl::StatusOr<ReduceOp> op = ParseReduceOp(name);
  return op.ok() ? std::vector<ReduceOp>{*op} : std::vector<ReduceOp>{};
}

// ---------------------------------------------------------------------------
// What runs and how.

absl::Status CheckOperation(const Context& c) {
  const v1::RunSpec& s = c.spec;
  if (!s.scenario().empty()) {
    if (!IsScenario(s.scenario())) {
      return FieldError("spec.scenario", "unknown scenario '", s.scenario(), "' (one of ",
                        absl::StrJoin(ScenarioNames(), ", "), ")");
    }
    if (!s.operation().empty() && s.operation() != s.scenario()) {
      return FieldError("spec.operation", "'", s.operation(), "' conflicts with scenario '",
                        s.scenario(), "'; leave it empty");
    }
    return absl::OkStatus();
  }
  if (s.operation().empty()) {
    return FieldError("spec.operation", "missing (one of ",
                      absl::StrJoin(OperationNames(), ", "), ", or a scenario)");
  }
  if (c.scenario.empty() && c.op == nullptr) {
    return FieldError("spec.operation", FindOperationSpec(s.operation()).status().message());
  }
  return absl::OkStatus();
}

absl::Status CheckBackendAndMpi(const Context& c) {
  if (c.backend == nullptr) {
    return FieldError("spec.backend", "unknown backend '", c.spec.backend(), "' (one of ",
                      absl::StrJoin(BackendNames(), ", "), ")");
  }
  if (!v1::MpiImplementation_IsValid(c.spec.mpi())) {
    return FieldError("spec.mpi", "unknown MpiImplementation value ", c.spec.mpi());
  }
  return absl::OkStatus();
}

absl::Status CheckDataTypeAndRedop(const Context& c) {
  if (c.dtypes.empty()) {
    std::vector<std::string> names;
    for (DataType t : AllDataTypes()) names.emplace_back(DataTypeName(t));
    return FieldError("spec.dtype", "unknown dtype '", c.spec.dtype(), "' (one of ",
                      absl::StrJoin(names, ", "), ", all)");
  }
  if (c.redops.empty()) {
    std::vector<std::string> names;
    for (ReduceOp op : AllReduceOps()) names.emplace_back(ReduceOpName(op));
    return FieldError("spec.redop", "unknown redop '", c.spec.redop(), "' (one of ",
                      absl::StrJoin(names, ", "), ", all)");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Sizes and iterations.

absl::Status CheckExplicitSizes(const Context& c) {
  const auto& sizes = c.spec.sizes_bytes();
  if (sizes.empty()) return absl::OkStatus();
  if (c.spec.min_bytes() != 0 || c.spec.max_bytes() != 0) {
    return FieldError("spec.sizes_bytes",
                      "give either sizes_bytes or min_bytes/max_bytes, not both");
  }
  if (sizes.size() > c.limits.max_sizes) {
    return FieldError("spec.sizes_bytes", sizes.size(), " sizes, at most ", c.limits.max_sizes,
                      " are allowed");
  }
  for (int i = 0; i < sizes.size(); ++i) {
    const std::string path = absl::StrCat("spec.sizes_bytes[", i, "]");
    if (sizes[i] == 0) return FieldError(path, "0 is not a size");
    if (sizes[i] > c.limits.max_message_bytes) {
      return FieldError(path, FormatBytes(sizes[i]), " exceeds the limit of ",
                        FormatBytes(c.limits.max_message_bytes));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSizeRange(const Context& c) {
  if (c.explicit_sizes()) return absl::OkStatus();
  const uint64_t min = c.min_bytes, max = c.max_bytes;
  const double factor = c.factor;
  if (max > c.limits.max_message_bytes) {
    return FieldError("spec.max_bytes", FormatBytes(max), " exceeds the limit of ",
                      FormatBytes(c.limits.max_message_bytes));
  }
  if (max < min) {
    return FieldError("spec.max_bytes", FormatBytes(max), " is below min_bytes (", FormatBytes(min),
                      ")");
  }
  if (!(factor > 1) || !std::isfinite(factor)) {
    return FieldError("spec.factor", factor, " must be a number greater than 1");
  }
  const size_t cap = static_cast<size_t>(c.limits.max_sizes);
  if (GeometricSweep(min, max, factor, cap + 1).size() > cap) {
    return FieldError("spec.factor", FormatBytes(min), "..", FormatBytes(max), " by ", factor,
                      " gives more than ", c.limits.max_sizes, " sizes");
  }
  return absl::OkStatus();
}

absl::Status CheckIterations(const Context& c) {
  const v1::RunSpec& s = c.spec;
  if (s.iters() < 0 || s.iters() > c.limits.max_iters) {
    return FieldError("spec.iters", s.iters(), " is outside 0..", c.limits.max_iters,
                      " (0: the size-dependent default)");
  }
  if (s.warmup() < -1 || s.warmup() > c.limits.max_iters) {
    return FieldError("spec.warmup", s.warmup(), " is outside -1..", c.limits.max_iters,
                      " (-1: the default)");
  }
  if (!s.has_time_budget()) return absl::OkStatus();
  absl::StatusOr<double> budget_s = DurationSeconds("spec.time_budget", s.time_budget());
  if (!budget_s.ok()) return budget_s.status();
  if (!(*budget_s > 0)) return FieldError("spec.time_budget", "must be positive");
  if (*budget_s > c.limits.max_time_budget_s) {
    return FieldError("spec.time_budget", FormatDuration(*budget_s), " exceeds the limit of ",
                      FormatDuration(c.limits.max_time_budget_s));
  }
  if (s.iters() != 0) {
    return FieldError("spec.time_budget", "conflicts with iters; give one or the other");
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Root, memory, validation and scenario settings.

absl::Status CheckRoot(const Context& c) {
  const int root = c.spec.root();
  if (root < 0) return FieldError("spec.root", root, " is negative");
  return absl::OkStatus();
}

// The kind's name is one the engine knows (whether it suits the buffers is
// an engine rule).
absl::Status CheckMemory(const Context& c) {
  const std::string& memory = c.spec.memory();
  if (memory.empty()) return absl::OkStatus();
  absl::StatusOr<ParsedMemoryKind> kind = ParseMemoryKind(memory);
  if (!kind.ok()) return FieldError("spec.memory", kind.status().message());
  return absl::OkStatus();
}

absl::Status CheckWindowAndScenario(const Context& c) {
  const v1::RunSpec& s = c.spec;
  if (s.window() < 0 || s.window() > kMaxWindow) {
    return FieldError("spec.window", s.window(), " is outside 1..", kMaxWindow,
                      " (0: the default)");
  }
  if (!s.strategy().empty()) {
    if (c.scenario != "parameter-server") {
      return FieldError("spec.strategy", "applies to scenario parameter-server only");
    }
    if (!Contains(StrategyNames(), s.strategy())) {
      return FieldError("spec.strategy", "unknown strategy '", s.strategy(), "' (one of ",
                        absl::StrJoin(StrategyNames(), ", "), ")");
    }
  }
  if (c.scenario != "gradient-replay" && (!s.model().empty() || s.bucket_bytes() != 0)) {
    return FieldError(s.model().empty() ? "spec.bucket_bytes" : "spec.model",
                      "applies to scenario gradient-replay only");
  }
  if (c.scenario != "gradient-replay" && (s.steps() != 0 || s.has_compute_time())) {
    return FieldError(s.steps() != 0 ? "spec.steps" : "spec.compute_time",
                      "applies to scenario gradient-replay only");
  }
  if (s.steps() < 0 || s.steps() > c.limits.max_iters) {
    return FieldError("spec.steps", s.steps(), " is outside 0..", c.limits.max_iters,
                      " (0: the time budget decides)");
  }
  if (s.has_compute_time()) {
    absl::StatusOr<double> compute_s = DurationSeconds("spec.compute_time", s.compute_time());
    if (!compute_s.ok()) return compute_s.status();
    if (*compute_s < 0) return FieldError("spec.compute_time", "must not be negative");
  }
  return absl::OkStatus();
}


absl::Status CheckSync(const Context& c) {
  const v1::RunSpec& s = c.spec;
  if (!v1::IterationSync_IsValid(s.sync())) {
    return FieldError("spec.sync", "unknown IterationSync value ", s.sync());
  }
  return absl::OkStatus();
}

// The engine's own rules (engine_spec/job_checks.h, scenarios.h) on the
// options collbench-rank would get, with the spec's rank count: the same
// verdict and text, after the field path instead of the flag.
absl::Status CheckEngineRules(const Context& c) {
  absl::StatusOr<EngineOptions> options = ParseEngineArgs(EngineArgs(c.spec));
  if (!options.ok()) return FieldError("spec", options.status().message());
  std::optional<RuleError> broken;
  if (!options->scenario.empty()) {
    broken = ScenarioRules(*options, c.spec.ranks());
  } else {
    RunPlan plan;
    broken = PlanRun(*options, c.spec.ranks(), &plan);
  }
  if (!broken) return absl::OkStatus();
  return FieldError(FieldPathOf(*broken), broken->text);
}

using Check = absl::Status (*)(const Context&);

absl::Status CheckArgWords(const Context& c) { return CheckEngineArgWords(c.spec); }

// In order: a check may rely on those before it having passed.
constexpr Check kChecks[] = {
    CheckArgWords,
    CheckOperation,
    CheckBackendAndMpi,
    CheckDataTypeAndRedop,
    CheckExplicitSizes,
    CheckSizeRange,
    CheckIterations,
    CheckRanks,
    CheckRoot,
    CheckMemory,
    CheckWindowAndScenario,
    CheckSync,
    CheckEngineRules,
    CheckPlacement,
    CheckTransport,
    CheckEnv,
    CheckTimeout,
    CheckLabels,
    CheckBufferMemory,
};

}  // namespace

bool SyncApplies(const Context& c) {
  return !c.scenario.empty() ||
         (c.op != nullptr && c.op->traits.op_class == OpClass::kCollective);
}

size_t Context::narrowest_element() const {
  size_t width = 8;
  for (DataType t : dtypes) width = std::min(width, ElementSize(t));
  return width;
}

Context Resolve(const v1::RunSpec& spec, const ValidationLimits& limits) {
  Context ctx(spec, limits);
  ctx.scenario = spec.scenario();
  if (ctx.scenario.empty() && IsScenario(spec.operation())) {
    ctx.scenario = spec.operation();  // as collbench-rank accepts it
  }
  if (ctx.scenario.empty()) {
    absl::StatusOr<const OperationSpec*> op = FindOperationSpec(spec.operation());
    if (op.ok()) ctx.op = *op;
  }
  const std::string backend = spec.backend().empty() ? "mpi" : spec.backend();
  ctx.backend = FindBackendSpec(backend);
  ctx.dtypes = ResolveDataTypes(spec.dtype(), ctx.scenario.empty() ? spec.operation() : ctx.scenario,
                                ctx.backend);
  ctx.redops = ResolveReduceOps(spec.redop());
  const EngineOptions defaults;
  ctx.min_bytes = spec.min_bytes() != 0 ? spec.min_bytes() : defaults.min_bytes;
  ctx.max_bytes = spec.max_bytes() != 0 ? spec.max_bytes() : defaults.max_bytes;
  ctx.factor = spec.factor() != 0 ? spec.factor() : defaults.factor;
  return ctx;
}

absl::StatusOr<double> DurationSeconds(absl::string_view path,
                                       const google::protobuf::Duration& d) {
  const bool mixed_signs = (d.seconds() > 0 && d.nanos() < 0) || (d.seconds() < 0 && d.nanos() > 0);
  if (std::abs(d.seconds()) > kMaxDurationSeconds || std::abs(d.nanos()) >= kNanosPerSecond ||
      mixed_signs) {
    return FieldError(path, "not a valid duration (seconds ", d.seconds(), ", nanos ", d.nanos(),
                      ")");
  }
  return static_cast<double>(d.seconds()) + d.nanos() * 1e-9;
}

std::string FieldPathOf(const RuleError& error) {
  switch (error.setting) {
    case Setting::kOperation: return "spec.operation";
    case Setting::kRanks: return "spec.ranks";
    case Setting::kBackend: return "spec.backend";
    case Setting::kDtype: return "spec.dtype";
    case Setting::kSizes: return absl::StrCat("spec.sizes_bytes[", error.index, "]");
    case Setting::kMinBytes: return "spec.min_bytes";
    case Setting::kMaxBytes: return "spec.max_bytes";
    case Setting::kRoot: return "spec.root";
    case Setting::kMemory: return "spec.memory";
    case Setting::kCheck: return "spec.check";
    case Setting::kSync: return "spec.sync";
    case Setting::kStrategy: return "spec.strategy";
    case Setting::kModel: return "spec.model";
    case Setting::kBucketBytes: return "spec.bucket_bytes";
    case Setting::kSteps: return "spec.steps";
    case Setting::kComputeTime: return "spec.compute_time";
    case Setting::kFactor: return "spec.factor";
    case Setting::kInPlace: return "spec.in_place";
  }
  return "spec";
}

}  // namespace collbench::validation_internal

namespace collbench {

namespace {

absl::Status Check(const validation_internal::Context& context) {
  for (validation_internal::Check check : validation_internal::kChecks) {
    if (absl::Status status = check(context); !status.ok()) return status;
  }
  return ValidateWorkerSelector(context.spec.workers(), "workers");
}

v1::IterationSync SyncOf(const validation_internal::Context& context) {
  if (!validation_internal::SyncApplies(context)) return v1::SYNC_NONE;
  const v1::IterationSync sync = context.spec.sync();
  return sync == v1::ITERATION_SYNC_UNSPECIFIED ? v1::SYNC_BARRIER : sync;
}

v1::RunSpec StoredFrom(const validation_internal::Context& context) {
  v1::RunSpec stored = context.spec;
  stored.set_sync(SyncOf(context));
  if (stored.transport() == v1::TRANSPORT_UNSPECIFIED) stored.set_transport(v1::AUTO);
  return stored;
}

}  // namespace

absl::Status ValidateRunSpec(const v1::RunSpec& spec, const ValidationLimits& limits) {
  return Check(validation_internal::Resolve(spec, limits));
}

v1::IterationSync ResolvedSync(const v1::RunSpec& spec) {
  return SyncOf(validation_internal::Resolve(spec, ValidationLimits()));
}

v1::RunSpec StoredSpec(const v1::RunSpec& spec) {
  return StoredFrom(validation_internal::Resolve(spec, ValidationLimits()));
}

absl::StatusOr<ValidatedRunSpec> ValidatedRunSpec::Validate(const v1::RunSpec& spec,
                                                            const ValidationLimits& limits) {
  const validation_internal::Context context = validation_internal::Resolve(spec, limits);
  if (absl::Status status = Check(context); !status.ok()) return status;
  return ValidatedRunSpec(StoredFrom(context));
}

}  // namespace collbench

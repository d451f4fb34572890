// ValidateRunSpec: one small check per concern, run in the order of
// kChecks over a Context that resolves the spec's names once. This file
// holds the resolution and the checks of the fields collbench-rank takes;
// validation_job.cc the rest.
#include "api/validation.h"

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
#include "worker/engine/collectives/operation.h"
#include "worker/engine/memory/memory_kind.h"
#include "worker/engine/options.h"
#include "worker/engine/pattern.h"
#include "worker/engine/scenarios/models.h"
#include "worker/engine/types.h"

namespace collbench::validation_internal {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kMaxDurationSeconds = 315'576'000'000;  // protobuf's bound
constexpr const char* kScenarios[] = {"parameter-server", "gradient-replay"};
constexpr const char* kStrategies[] = {"host", "mpi-staged", "nccl-chief", "mpi-cuda"};
constexpr BackendEntry kBackends[] = {
    {"mpi", MemorySpace::kHost, "host"},
    {"host-staged", MemorySpace::kHost, "host"},
    {"mpi-object", MemorySpace::kHost, "host"},
    {"mpi-staged", MemorySpace::kDevice, "mpi-staged"},
    {"mpi-cuda", MemorySpace::kDevice, "mpi-cuda"},
    {"nccl", MemorySpace::kDevice, "nccl-chief"},
};

template <typename Range>
bool Contains(const Range& names, absl::string_view name) {
  return std::any_of(std::begin(names), std::end(names),
                     [&](absl::string_view n) { return n == name; });
}

// Immutable once built; shared by every call.
const OperationRegistry& Operations() {
  static const OperationRegistry* const registry = [] {
    auto* r = new OperationRegistry;
    RegisterBuiltinOperations(r);
    return r;
  }();
  return *registry;
}

const MemoryKindRegistry& MemoryKinds() {
  static const MemoryKindRegistry* const registry = [] {
    auto* r = new MemoryKindRegistry;
    RegisterBuiltinMemoryKinds(r);
    return r;
  }();
  return *registry;
}

std::vector<DataType> ResolveDataTypes(absl::string_view name, const BackendEntry* backend) {
  if (name.empty()) return {DataType::kFloat32};
  if (name != "all") {
    absl::StatusOr<DataType> t = ParseDataType(name);
    return t.ok() ? std::vector<DataType>{*t} : std::vector<DataType>{};
  }
  std::vector<DataType> all;
  const bool nccl = backend != nullptr && backend->name == absl::string_view("nccl");
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
    if (!Contains(kScenarios, s.scenario())) {
      return FieldError("spec.scenario", "unknown scenario '", s.scenario(), "' (one of ",
                        absl::StrJoin(kScenarios, ", "), ")");
    }
    if (!s.operation().empty() && s.operation() != s.scenario()) {
      return FieldError("spec.operation", "'", s.operation(), "' conflicts with scenario '",
                        s.scenario(), "'; leave it empty");
    }
    return absl::OkStatus();
  }
  if (s.operation().empty()) {
    return FieldError("spec.operation", "missing (one of ",
                      absl::StrJoin(Operations().Names(), ", "), ", or a scenario)");
  }
  if (c.scenario.empty() && c.op == nullptr) {
    return FieldError("spec.operation", Operations().Find(s.operation()).status().message());
  }
  return absl::OkStatus();
}

absl::Status CheckBackendAndMpi(const Context& c) {
  if (c.backend == nullptr) {
    std::vector<std::string> names;
    for (const BackendEntry& entry : kBackends) names.push_back(entry.name);
    return FieldError("spec.backend", "unknown backend '", c.spec.backend(), "' (one of ",
                      absl::StrJoin(names, ", "), ")");
  }
  if (!v1::MpiImplementation_IsValid(c.spec.mpi())) {
    return FieldError("spec.mpi", "unknown MpiImplementation value ", c.spec.mpi());
  }
  if (c.backend->name == absl::string_view("mpi-object") && c.spec.operation() == "reduce_scatter") {
    return FieldError("spec.backend", "mpi-object has no reduce_scatter (the object path has no "
                      "such call)");
  }
  return absl::OkStatus();
}

// The parameter-server strategy in effect: the given one, else the backend's.
std::string EffectiveStrategy(const Context& c) {
  return c.spec.strategy().empty() ? c.backend->strategy : c.spec.strategy();
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
  if (c.op != nullptr && c.op->traits().floats_only) {
    for (DataType t : c.dtypes) {
      if (t != DataType::kFloat32 && t != DataType::kFloat64) {
        return FieldError("spec.dtype", c.op->name(), " computes in float32 or float64, not ",
                          DataTypeName(t));
      }
    }
  }
  const bool sixteen_bit = std::any_of(c.dtypes.begin(), c.dtypes.end(), IsNcclOnly);
  if (!sixteen_bit) return absl::OkStatus();
  if (c.scenario == "parameter-server") {
    if (Contains(kStrategies, EffectiveStrategy(c)) && EffectiveStrategy(c) != "nccl-chief") {
      return FieldError("spec.dtype", c.dtype_name(),
                        " needs strategy nccl-chief (MPI has no 16-bit float type)");
    }
  } else if (c.backend->name != absl::string_view("nccl") &&
             (c.op == nullptr || c.op->traits().op_class != OpClass::kCopy)) {
    return FieldError("spec.dtype", c.dtype_name(),
                      " needs backend nccl (MPI has no 16-bit float type)");
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
  const size_t width = c.widest_element();
  for (int i = 0; i < sizes.size(); ++i) {
    const std::string path = absl::StrCat("spec.sizes_bytes[", i, "]");
    if (sizes[i] == 0) return FieldError(path, "0 is not a size");
    if (sizes[i] < width) {
      return FieldError(path, sizes[i], " bytes is less than one ", c.dtype_name(), " element (",
                        width, " bytes)");
    }
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
  const size_t width = c.widest_element();
  if (min < width) {
    return FieldError("spec.min_bytes", min, " bytes is less than one ", c.dtype_name(),
                      " element (", width, " bytes)");
  }
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
  if (ShapeOfSweep(min, max, factor, c.limits.max_sizes).count > c.limits.max_sizes) {
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
  if (c.op != nullptr && c.op->traits().rooted && root >= c.spec.ranks()) {
    return FieldError("spec.root", root, " is out of range for ", c.spec.ranks(), " ranks (0..",
                      c.spec.ranks() - 1, ")");
  }
  return absl::OkStatus();
}

// The kind's name is one the engine knows, and it suits the buffers: the
// same rules as collbench-rank's memory plan (worker/engine/job_checks.cc).
absl::Status CheckMemory(const Context& c) {
  const std::string& memory = c.spec.memory();
  if (memory.empty()) return absl::OkStatus();
  // Plain names are looked up without creating the kind (creating
  // hbw_preferred probes the machine); "name:arg" goes to the kind's parser.
  const std::vector<std::string> names = MemoryKinds().Names();
  if (memory.find(':') != std::string::npos || !Contains(names, memory)) {
    absl::StatusOr<std::unique_ptr<MemoryKind>> kind = MemoryKinds().Create(memory, nullptr);
    if (!kind.ok()) return FieldError("spec.memory", kind.status().message());
  }
  if (c.op == nullptr) return absl::OkStatus();  // scenarios place their own buffers
  const bool device = memory == "device";
  if (c.op->traits().op_class == OpClass::kCopy && !c.op->traits().needs_device) {
    if (device) {
      return FieldError("spec.memory", c.op->name(), " copies between two host buffers: ",
                        "use a host kind (e.g. default or interleave)");
    }
  } else if (c.op->traits().op_class == OpClass::kCopy) {
    if (device) {
      return FieldError("spec.memory", "for ", c.op->name(),
                        " it names the host side "
                        "(e.g. pinned or default); the device side is always device memory");
    }
  } else if (c.backend->space == MemorySpace::kHost && device) {
    return FieldError("spec.memory",
                      "device needs a device backend (mpi-staged, mpi-cuda or "
                      "nccl), not ",
                      c.backend->name);
  } else if (c.backend->space == MemorySpace::kDevice && !device) {
    return FieldError("spec.memory", "backend ", c.backend->name,
                      " works on GPU buffers: use device (or leave it empty)");
  }
  return absl::OkStatus();
}

absl::Status CheckExactValidation(const Context& c) {
  if (!c.spec.check()) return absl::OkStatus();
  const bool reduces = c.op != nullptr ? c.op->traits().reduces : c.scenario == "gradient-replay";
  if (!reduces) return absl::OkStatus();
  const std::vector<ReduceOp> redops =
      c.op != nullptr ? c.redops : std::vector<ReduceOp>{ReduceOp::kSum};
  for (DataType dtype : c.dtypes) {
    for (ReduceOp redop : redops) {
      absl::Status exact = CheckReductionExact(dtype, redop, c.spec.ranks());
      if (!exact.ok()) return FieldError("spec.check", exact.message());
    }
  }
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
    if (!Contains(kStrategies, s.strategy())) {
      return FieldError("spec.strategy", "unknown strategy '", s.strategy(), "' (one of ",
                        absl::StrJoin(kStrategies, ", "), ")");
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
  if (!s.model().empty()) {
    absl::StatusOr<ModelGradients> model = LoadModel(s.model());
    if (!model.ok()) return FieldError("spec.model", model.status().message());
  }
  return absl::OkStatus();
}


absl::Status CheckSync(const Context& c) {
  const v1::RunSpec& s = c.spec;
  if (!v1::IterationSync_IsValid(s.sync())) {
    return FieldError("spec.sync", "unknown IterationSync value ", s.sync());
  }
  if (s.sync() == v1::SYNC_BARRIER && !SyncApplies(c)) {
    return FieldError("spec.sync", "barrier does not apply to ", s.operation(),
                      ": point-to-point patterns and copies keep their own back-to-back "
                      "loop (OSU's); leave it unset or use none");
  }
  return absl::OkStatus();
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
    CheckExactValidation,
    CheckWindowAndScenario,
    CheckSync,
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
         (c.op != nullptr && c.op->traits().op_class == OpClass::kCollective);
}

std::string Context::dtype_name() const {
  return spec.dtype().empty() ? std::string(DataTypeName(DataType::kFloat32)) : spec.dtype();
}

size_t Context::widest_element() const {
  size_t width = 1;
  for (DataType t : dtypes) width = std::max(width, ElementSize(t));
  return width;
}

size_t Context::narrowest_element() const {
  size_t width = 8;
  for (DataType t : dtypes) width = std::min(width, ElementSize(t));
  return width;
}

Context Resolve(const v1::RunSpec& spec, const ValidationLimits& limits) {
  Context ctx(spec, limits);
  ctx.scenario = spec.scenario();
  if (ctx.scenario.empty() && Contains(kScenarios, spec.operation())) {
    ctx.scenario = spec.operation();  // as collbench-rank accepts it
  }
  if (ctx.scenario.empty()) {
    absl::StatusOr<const Operation*> op = Operations().Find(spec.operation());
    if (op.ok()) ctx.op = *op;
  }
  const std::string backend = spec.backend().empty() ? "mpi" : spec.backend();
  for (const BackendEntry& entry : kBackends) {
    if (backend == entry.name) ctx.backend = &entry;
  }
  ctx.dtypes = ResolveDataTypes(spec.dtype(), ctx.backend);
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

SweepShape ShapeOfSweep(uint64_t min, uint64_t max, double factor, int cap) {
  SweepShape shape;
  for (double s = static_cast<double>(min); s <= static_cast<double>(max) && shape.count <= cap;) {
    const uint64_t bytes = static_cast<uint64_t>(std::llround(s));
    if (shape.count == 0 || bytes > shape.largest) {
      ++shape.count;
      shape.largest = bytes;
    }
    const double next = s * factor;
    s = next > s + 1 ? next : s + 1;
  }
  return shape;
}

}  // namespace collbench::validation_internal

namespace collbench {

absl::Status ValidateRunSpec(const v1::RunSpec& spec, const ValidationLimits& limits) {
  using validation_internal::kChecks;
  const validation_internal::Context context = validation_internal::Resolve(spec, limits);
  for (validation_internal::Check check : kChecks) {
    if (absl::Status status = check(context); !status.ok()) return status;
  }
  return absl::OkStatus();
}

v1::IterationSync ResolvedSync(const v1::RunSpec& spec) {
  const validation_internal::Context context =
      validation_internal::Resolve(spec, ValidationLimits());
  if (!validation_internal::SyncApplies(context)) return v1::SYNC_NONE;
  return spec.sync() == v1::ITERATION_SYNC_UNSPECIFIED ? v1::SYNC_BARRIER : spec.sync();
}

}  // namespace collbench

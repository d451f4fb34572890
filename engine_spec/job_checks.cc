// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/job_checks.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/units.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

bool IsDeviceKind(const std::string& kind) { return kind == "device"; }

// Which kinds serve the buffers, and whether --memory suits them.
std::optional<RuleError> PlanMemory(const EngineOptions& o, const OperationSpec& op,
                                    const BackendSpec& backend, MemoryPlan* plan) {
  const OpTraits traits = op.traits;
  if (traits.op_class == OpClass::kCopy && !traits.needs_device) {
    if (IsDeviceKind(o.memory)) {
      return Broken(Setting::kMemory,
                    absl::StrCat("device: ", op.name,
                                 " copies between two host buffers; use a host kind (e.g. "
                                 "default or interleave)"));
    }
    plan->host_kind = o.memory.empty() ? "default" : o.memory;
  } else if (traits.op_class == OpClass::kCopy) {
    if (IsDeviceKind(o.memory)) {
      return Broken(Setting::kMemory,
                    absl::StrCat("device: for ", op.name,
                                 " it names the host side (e.g. pinned or default); the "
                                 "device side is always device memory"));
    }
    plan->host_kind = o.memory.empty() ? "pinned" : o.memory;
    plan->device_kind = "device";
  } else if (backend.space == MemorySpace::kHost) {
    if (IsDeviceKind(o.memory)) {
      return Broken(Setting::kMemory,
                    absl::StrCat("device needs a device backend (mpi-staged, mpi-cuda or "
                                 "nccl), not ",
                                 backend.name));
    }
    plan->host_kind = o.memory.empty() ? "default" : o.memory;
  } else {
    if (!o.memory.empty() && !IsDeviceKind(o.memory)) {
      return Broken(Setting::kMemory, absl::StrCat(o.memory, ": backend ", backend.name,
                                                   " works on GPU buffers; use device (or "
                                                   "leave it unset)"));
    }
    plan->host_kind = "default";
    plan->device_kind = "device";
  }
  plan->needs_device = !plan->device_kind.empty() || plan->host_kind == "pinned";
  return std::nullopt;
}

}  // namespace

std::optional<RuleError> CheckElementWidth(const EngineOptions& o) {
  const uint64_t width = ElementSize(o.dtype);
  const std::vector<uint64_t> sizes = SweepSizes(o);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t bytes = sizes[i];
    if (bytes >= width && bytes % width == 0) continue;
    const std::string element =
        absl::StrCat(DataTypeName(o.dtype), " element", bytes < width ? "" : "s", " (", width,
                     " bytes", bytes < width ? ")" : " each)");
    const std::string what = bytes < width ? absl::StrCat("is less than one ", element)
                                           : absl::StrCat("is not a whole number of ", element);
    if (!o.sizes_bytes.empty() || i == 0) {
      return RuleError{o.sizes_bytes.empty() ? Setting::kMinBytes : Setting::kSizes,
                       o.sizes_bytes.empty() ? -1 : static_cast<int>(i),
                       absl::StrCat(bytes, " bytes ", what, "; use a multiple of ", width,
                                    " bytes or the int8 dtype")};
    }
    return Broken(Setting::kFactor,
                  absl::StrCat(o.factor, " from ", o.min_bytes, " bytes makes ", bytes,
                               " bytes, which ", what, "; use a whole factor or the int8 dtype"));
  }
  return std::nullopt;
}

std::optional<RuleError> CheckInPlace(const EngineOptions& o, const OperationSpec& op,
                                      const BackendSpec& backend) {
  if (!o.in_place) return std::nullopt;
  if (!op.traits.in_place) {
    return Broken(Setting::kInPlace,
                  absl::StrCat("does not apply to ", op.name,
                               ": it has no in-place form (in-place runs allreduce, reduce, "
                               "bcast, allgather, gather and alltoall)"));
  }
  if (backend.in_place == InPlaceForm::kNone) {
    return Broken(Setting::kInPlace,
                  absl::StrCat("does not apply to backend ", backend.name,
                               ": it stages or serializes every buffer; in-place runs on mpi, "
                               "mpi-cuda and nccl"));
  }
  if (backend.in_place == InPlaceForm::kNccl && !op.traits.in_place_on_nccl) {
    return Broken(Setting::kInPlace,
                  absl::StrCat("does not apply to ", op.name, " on nccl: NCCL has no ", op.name,
                               " call to give one pointer (on nccl in-place runs allreduce, "
                               "reduce, bcast and allgather)"));
  }
  return std::nullopt;
}

absl::string_view FlagOf(Setting setting) {
  switch (setting) {
    case Setting::kOperation: return "";
    case Setting::kRanks: return "";
    case Setting::kBackend: return "--backend";
    case Setting::kDtype: return "--dtype";
    case Setting::kSizes: return "--sizes";
    case Setting::kMinBytes: return "--min-bytes";
    case Setting::kRoot: return "--root";
    case Setting::kMemory: return "--memory";
    case Setting::kMaxBytes: return "--max-bytes";
    case Setting::kCheck: return "--check";
    case Setting::kSync: return "--sync";
    case Setting::kStrategy: return "--strategy";
    case Setting::kModel: return "--model";
    case Setting::kBucketBytes: return "--bucket-bytes";
    case Setting::kSteps: return "--steps";
    case Setting::kComputeTime: return "--compute-time";
    case Setting::kFactor: return "--factor";
    case Setting::kInPlace: return "--in-place";
  }
  return "";
}

RuleError RuleErrorFrom(Setting setting, const absl::Status& status) {
  absl::string_view text = status.message();
  const absl::string_view flag = FlagOf(setting);
  if (!flag.empty() && absl::StartsWith(text, flag) && text.size() > flag.size() &&
      text[flag.size()] == ' ') {
    text.remove_prefix(flag.size() + 1);
  }
  return Broken(setting, std::string(text));
}

absl::Status EngineError(const RuleError& error) {
  const absl::string_view flag = FlagOf(error.setting);
  if (flag.empty()) return absl::InvalidArgumentError(error.text);
  return absl::InvalidArgumentError(absl::StrCat(flag, " ", error.text));
}

std::optional<RuleError> CheckJob(const EngineOptions& o, const OperationSpec& op,
                                  const BackendSpec& backend, int nranks, MemoryPlan* plan) {
  const OpTraits traits = op.traits;
  if (traits.rooted && o.root >= nranks) {
    return Broken(Setting::kRoot, absl::StrCat(o.root, " is out of range for ", nranks,
                                               " ranks (0..", nranks - 1, ")"));
  }
  if (traits.needs_even_ranks && (nranks < 2 || nranks % 2 != 0)) {
    return Broken(Setting::kRanks,
                  absl::StrCat(op.name, " runs between pairs of ranks and needs an even number "
                                        "of ranks, got ",
                               nranks));
  }
  if (absl::string_view(backend.name) == "mpi-object" &&
      absl::string_view(op.name) == "reduce_scatter") {
    return Broken(Setting::kBackend,
                  "mpi-object has no reduce_scatter (the object path has no such call)");
  }
  if (traits.floats_only && o.dtype != DataType::kFloat32 && o.dtype != DataType::kFloat64) {
    return Broken(Setting::kDtype, absl::StrCat(DataTypeName(o.dtype), ": ", op.name,
                                                " computes in float32 or float64"));
  }
  if (IsNcclOnly(o.dtype) && absl::string_view(backend.name) != kNcclBackend &&
      traits.op_class != OpClass::kCopy) {
    return Broken(Setting::kDtype, absl::StrCat(DataTypeName(o.dtype),
                                                " needs backend nccl (MPI has no 16-bit float "
                                                "type)"));
  }
  if (std::optional<RuleError> width = CheckElementWidth(o)) return width;
  if (std::optional<RuleError> in_place = CheckInPlace(o, op, backend)) return in_place;
  if (o.check && traits.reduces) {
    if (absl::Status s = CheckReductionExact(o.dtype, o.redop, nranks); !s.ok()) {
      return RuleErrorFrom(Setting::kCheck, s);
    }
  }
  return PlanMemory(o, op, backend, plan);
}

absl::string_view EffectiveBackend(const EngineOptions& options, const OperationSpec& op) {
  if (op.traits.op_class == OpClass::kCopy) return "mpi";
  return options.backend;
}

std::vector<std::pair<DataType, ReduceOp>> Combinations(const EngineOptions& o,
                                                        const OperationSpec& op,
                                                        const BackendSpec& backend) {
  std::vector<DataType> dtypes;
  for (DataType t : AllDataTypes()) {
    const bool carried = absl::string_view(backend.name) == kNcclBackend ||
                         op.traits.op_class == OpClass::kCopy || !IsNcclOnly(t);
    if (o.all_dtypes ? carried : t == o.dtype) dtypes.push_back(t);
  }
  std::vector<ReduceOp> redops = {o.redop};
  if (o.all_redops && op.traits.reduces) redops = AllReduceOps();
  std::vector<std::pair<DataType, ReduceOp>> out;
  for (DataType t : dtypes) {
    for (ReduceOp r : redops) out.emplace_back(t, r);
  }
  return out;
}

std::optional<RuleError> PlanRun(const EngineOptions& options, int nranks, RunPlan* plan) {
  absl::StatusOr<const OperationSpec*> op = FindOperationSpec(options.operation);
  if (!op.ok()) return Broken(Setting::kOperation, std::string(op.status().message()));
  plan->op = *op;
  const absl::string_view backend = EffectiveBackend(options, **op);
  plan->backend = FindBackendSpec(backend);
  if (plan->backend == nullptr) {
    return Broken(Setting::kBackend, absl::StrCat("'", backend, "' is not a backend (one of ",
                                                  absl::StrJoin(BackendNames(), ", "), ")"));
  }
  const bool collective = (*op)->traits.op_class == OpClass::kCollective;
  if (absl::Status s = CheckSyncApplies(options, collective, (*op)->name); !s.ok()) {
    return RuleErrorFrom(Setting::kSync, s);
  }
  plan->runs.clear();
  for (const auto& [dtype, redop] : Combinations(options, **op, *plan->backend)) {
    EngineOptions run = options;
    run.dtype = dtype;
    run.redop = redop;
    run.sync = EffectiveSync(options, collective);
    if (std::optional<RuleError> broken =
            CheckJob(run, **op, *plan->backend, nranks, &plan->memory)) {
      return broken;
    }
    plan->runs.push_back(std::move(run));
  }
  return std::nullopt;
}

uint64_t PlannedSizeRecords(const EngineOptions& options) {
  const uint64_t sizes = SweepSizes(options).size();
  if (!options.scenario.empty()) return sizes;
  absl::StatusOr<const OperationSpec*> op = FindOperationSpec(options.operation);
  if (!op.ok()) return 0;
  const BackendSpec* backend = FindBackendSpec(EffectiveBackend(options, **op));
  if (backend == nullptr) return 0;
  return sizes * Combinations(options, **op, *backend).size();
}

uint64_t PeakBufferBytes(const EngineOptions& options, const OperationSpec& op, int rank,
                         int nranks) {
  const size_t width = ElementSize(options.dtype);
  uint64_t peak = 0;
  for (uint64_t bytes : SweepSizes(options)) {
    OpContext ctx;
    ctx.rank = rank;
    ctx.nranks = nranks;
    ctx.dtype = options.dtype;
    ctx.count = bytes / width;
    ctx.root = options.root;
    ctx.in_place = options.in_place;
    const OpBuffers b = op.buffers(ctx);
    const uint64_t count = options.in_place && op.traits.in_place
                               ? InPlaceLayoutOf(op, ctx).buffer_count
                               : uint64_t{b.send_count} + b.recv_count;
    peak = std::max<uint64_t>(peak, count * width);
  }
  return peak;
}

absl::Status CheckFits(uint64_t bytes_per_rank, int ranks_here, uint64_t available_bytes,
                       const std::string& where, const std::string& advice) {
  const uint64_t needed = bytes_per_rank * static_cast<uint64_t>(ranks_here);
  if (needed <= available_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "buffers do not fit in ", where, ": the largest size needs ",
      FormatBytesHuman(bytes_per_rank), " per rank x ", ranks_here, " ranks here = ",
      FormatBytesHuman(needed), ", but only ", FormatBytesHuman(available_bytes),
      " is available; ", advice));
}

absl::StatusOr<uint64_t> HostMemoryAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t kib = 0;
    if (parts.size() >= 2 && parts[0] == "MemAvailable:" && absl::SimpleAtoi(parts[1], &kib)) {
      return kib * 1024;
    }
  }
  return absl::UnavailableError("cannot read MemAvailable from /proc/meminfo");
}

}  // namespace collbench

#include "worker/engine/job_checks.h"

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/units.h"
#include "worker/engine/pattern.h"

namespace collbench {
namespace {

bool IsDeviceKind(const std::string& kind) { return kind == "device"; }

absl::StatusOr<MemoryPlan> PlanMemory(const EngineOptions& o, const Operation& op,
                                      const BackendInfo& backend) {
  MemoryPlan plan;
  if (op.traits().op_class == OpClass::kCopy && !op.traits().needs_device) {
    if (IsDeviceKind(o.memory)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--memory device: ", op.name(), " copies between two host buffers"));
    }
    plan.host_kind = o.memory.empty() ? "default" : o.memory;
  } else if (op.traits().op_class == OpClass::kCopy) {
    if (!o.memory.empty() && IsDeviceKind(o.memory)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--memory for ", op.name(), " names the host side (e.g. pinned or default); "
          "the device side is always device memory"));
    }
    plan.host_kind = o.memory.empty() ? "pinned" : o.memory;
    plan.device_kind = "device";
  } else if (backend.space == MemorySpace::kHost) {
    if (IsDeviceKind(o.memory)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--memory device needs a device backend (mpi-staged, mpi-cuda or nccl), not --backend ",
          backend.name));
    }
    plan.host_kind = o.memory.empty() ? "default" : o.memory;
  } else {
    if (!o.memory.empty() && !IsDeviceKind(o.memory)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--backend ", backend.name, " works on GPU buffers: use --memory device (or leave it out)"));
    }
    plan.host_kind = "default";
    plan.device_kind = "device";
  }
  plan.needs_device = !plan.device_kind.empty() || plan.host_kind == "pinned";
  return plan;
}

}  // namespace

absl::StatusOr<MemoryPlan> CheckJob(const EngineOptions& o, const Operation& op,
                                    const BackendInfo& backend, int nranks) {
  const OpTraits traits = op.traits();
  if (traits.rooted && o.root >= nranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--root ", o.root, " is out of range for ", nranks, " ranks (0..", nranks - 1, ")"));
  }
  if (traits.needs_even_ranks && (nranks < 2 || nranks % 2 != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op.name(), " runs between pairs of ranks and needs an even number of ranks, got ",
        nranks));
  }
  if (backend.name == "mpi-object" && op.name() == "reduce_scatter") {
    return absl::InvalidArgumentError(
        "--backend mpi-object has no reduce_scatter (the object path has no such call)");
  }
  if (traits.floats_only && o.dtype != DataType::kFloat32 && o.dtype != DataType::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat(
        op.name(), " computes in float32 or float64, not --dtype ", DataTypeName(o.dtype)));
  }
  if (IsNcclOnly(o.dtype) && backend.name != "nccl" && traits.op_class != OpClass::kCopy) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dtype ", DataTypeName(o.dtype), " needs --backend nccl (MPI has no 16-bit float type)"));
  }
  const uint64_t width = ElementSize(o.dtype);
  for (uint64_t bytes : SweepSizes(o)) {
    if (bytes < width) {
      return absl::InvalidArgumentError(absl::StrCat(
          "size ", FormatBytes(bytes), " is smaller than one ", DataTypeName(o.dtype),
          " element (", width, " bytes)"));
    }
  }
  if (o.check && traits.reduces) {
    if (absl::Status s = CheckReductionExact(o.dtype, o.redop, nranks); !s.ok()) {
      return absl::InvalidArgumentError(s.message());
    }
  }
  return PlanMemory(o, op, backend);
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

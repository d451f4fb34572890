// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/operations.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {
namespace {

OpBuffers Same(const OpContext& c) { return {.send_count = c.count, .recv_count = c.count}; }

// Every rank sends `count`; the root receives n blocks in rank order.
OpBuffers GatherBuffers(const OpContext& c) {
  return {.send_count = c.count, .recv_count = c.rank == c.root ? c.count * c.nranks : 0};
}
OpBuffers AllgatherBuffers(const OpContext& c) {
  return {.send_count = c.count, .recv_count = c.count * c.nranks};
}
OpBuffers ReduceScatterBuffers(const OpContext& c) {
  return {.send_count = c.count * c.nranks, .recv_count = c.count};
}
OpBuffers AlltoallBuffers(const OpContext& c) {
  return {.send_count = c.count * c.nranks, .recv_count = c.count * c.nranks};
}

template <MemorySpace kFrom, MemorySpace kTo>
OpBuffers CopyBuffers(const OpContext& c) {
  return {.send_count = c.count, .recv_count = c.count, .send_space = kFrom, .recv_space = kTo};
}

// A, then B in the send buffer; C in the receive buffer.
OpBuffers GemmBuffers(const OpContext& c) {
  const size_t n = GemmSide(c.count);
  return {.send_count = 2 * n * n,
          .recv_count = n * n,
          .send_space = MemorySpace::kHost,
          .recv_space = MemorySpace::kHost};
}

constexpr MemorySpace kHost = MemorySpace::kHost;
constexpr MemorySpace kDevice = MemorySpace::kDevice;
constexpr OpTraits kPointToPoint = {.op_class = OpClass::kPointToPoint, .needs_even_ranks = true};
constexpr OpTraits kDeviceCopy = {.op_class = OpClass::kCopy, .needs_device = true};

}  // namespace

const std::vector<OperationSpec>& OperationSpecs() {
  static const auto* specs = new std::vector<OperationSpec>{
      {"allgather", {.in_place = true, .in_place_on_nccl = true}, AllgatherBuffers},
      {"allreduce", {.reduces = true, .in_place = true, .in_place_on_nccl = true}, Same},
      {"alltoall", {.in_place = true}, AlltoallBuffers},
      {"bcast", {.rooted = true, .in_place = true, .in_place_on_nccl = true}, Same},
      {"bibw", kPointToPoint, Same},
      {"bw", kPointToPoint, Same},
      {"d2d", kDeviceCopy, CopyBuffers<kDevice, kDevice>},
      {"d2h", kDeviceCopy, CopyBuffers<kDevice, kHost>},
      {"gather", {.rooted = true, .in_place = true}, GatherBuffers},
      // A local probe like the copies: each rank works on its own buffers.
      {"gemm", {.op_class = OpClass::kCopy, .floats_only = true}, GemmBuffers},
      {"h2d", kDeviceCopy, CopyBuffers<kHost, kDevice>},
      {"h2h", {.op_class = OpClass::kCopy}, CopyBuffers<kHost, kHost>},
      {"latency", kPointToPoint, Same},
      {"reduce", {.rooted = true, .reduces = true, .in_place = true, .in_place_on_nccl = true},
       Same},
      {"reduce_scatter", {.reduces = true}, ReduceScatterBuffers},
  };
  return *specs;
}

std::vector<std::string> OperationNames() {
  std::vector<std::string> names;
  for (const OperationSpec& spec : OperationSpecs()) names.emplace_back(spec.name);
  return names;
}

absl::StatusOr<const OperationSpec*> FindOperationSpec(absl::string_view name) {
  for (const OperationSpec& spec : OperationSpecs()) {
    if (name == spec.name) return &spec;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown operation '", name, "' (one of ", absl::StrJoin(OperationNames(), ", "), ")"));
}

const OperationSpec& OperationSpecNamed(absl::string_view name) {
  absl::StatusOr<const OperationSpec*> spec = FindOperationSpec(name);
  if (!spec.ok()) std::abort();  // a programming error: the table names every operation
  return **spec;
}

DataType DefaultDataType(absl::string_view operation) {
  absl::StatusOr<const OperationSpec*> op = FindOperationSpec(operation);
  if (!op.ok()) return DataType::kFloat32;
  const OpTraits traits = (*op)->traits;
  return traits.reduces || traits.floats_only ? DataType::kFloat32 : DataType::kInt8;
}

InPlaceLayout InPlaceLayoutOf(const OperationSpec& op, const OpContext& ctx) {
  const OpBuffers apart = op.buffers(ctx);
  InPlaceLayout layout;
  layout.input_count = apart.send_count;
  const absl::string_view name = op.name;
  if (name == "allgather" || (name == "gather" && ctx.rank == ctx.root)) {
    layout.input_offset = static_cast<size_t>(ctx.rank) * ctx.count;
  }
  layout.buffer_count = std::max(apart.recv_count, layout.input_offset + layout.input_count);
  return layout;
}

size_t GemmSide(size_t count) {
  size_t n = static_cast<size_t>(std::sqrt(static_cast<double>(count)));
  while (n * n > count) --n;
  while ((n + 1) * (n + 1) <= count) ++n;
  return n;
}

}  // namespace collbench

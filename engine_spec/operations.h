// SPDX-License-Identifier: Apache-2.0
// The operations collbench-rank measures, as vocabulary
// (docs/design/data-plane.md#operations): each one's name, traits and the
// buffers it needs on one rank. The engine's Operation
// (worker/engine/collectives/operation.h) attaches what runs to an entry of
// this table; validation (api/) and the peak buffer computation read the same
// entries, so there is one owner of "what does gather allocate on the root".
//
// Thread-safe: the table is immutable once built.
#ifndef COLLBENCH_ENGINE_SPEC_OPERATIONS_H_
#define COLLBENCH_ENGINE_SPEC_OPERATIONS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine_spec/types.h"

namespace collbench {

// The most messages in flight for bw / bibw (--window).
inline constexpr int kMaxWindow = 1024;

// Everything one iteration of an operation depends on.
struct OpContext {
  int rank = 0;
  int nranks = 1;
  size_t count = 0;  // elements per rank (per peer for alltoall)
  DataType dtype = DataType::kFloat32;
  ReduceOp redop = ReduceOp::kSum;
  int root = 0;
  int window = 64;  // bw / bibw messages in flight, <= kMaxWindow
  // --in-place: the driver passes one buffer (InPlaceLayoutOf) as both.
  bool in_place = false;
};

enum class OpClass { kCollective, kPointToPoint, kCopy };

struct OpTraits {
  OpClass op_class = OpClass::kCollective;
  bool rooted = false;   // uses --root
  bool reduces = false;  // uses --redop
  bool needs_even_ranks = false;  // point-to-point pairs
  bool needs_device = false;      // h2d, d2h, d2d
  bool floats_only = false;       // gemm: float32 and float64
  // Has an in-place form (--in-place): one buffer is both input and output,
  // as MPI_IN_PLACE and NCCL's same-pointer calls (InPlaceLayout).
  bool in_place = false;
  // NCCL has a same-pointer form of it too; gather and alltoall have none
  // (the backend composes them from sends and receives).
  bool in_place_on_nccl = false;
};

// Element counts of the two buffers on one rank. The driver allocates
// separate send and receive buffers so validation sees what the library
// wrote; with --in-place it allocates the receive buffer only and the
// input lives in it (InPlaceLayout).
struct OpBuffers {
  size_t send_count = 0;
  size_t recv_count = 0;
  // Copies choose their own spaces; collectives use the backend's.
  std::optional<MemorySpace> send_space;
  std::optional<MemorySpace> recv_space;
};

struct OperationSpec {
  const char* name;
  OpTraits traits;
  OpBuffers (*buffers)(const OpContext& ctx);
};

// bcast, gather, allreduce, allgather, reduce, reduce_scatter, alltoall,
// latency, bw, bibw, h2d, d2h, d2d, h2h, gemm; sorted by name.
const std::vector<OperationSpec>& OperationSpecs();
std::vector<std::string> OperationNames();

// InvalidArgument listing the known operations when `name` is unknown.
absl::StatusOr<const OperationSpec*> FindOperationSpec(absl::string_view name);

// The entry named `name`. REQUIRES: `name` is in OperationSpecs().
const OperationSpec& OperationSpecNamed(absl::string_view name);

// The element type an operation measures when --dtype is not given:
// float32 for the ones that compute on the data (reductions, gemm), int8
// for those that only move bytes (point-to-point, bcast, gather, allgather,
// alltoall, copies), so any byte count is whole elements and a sweep can
// start at 1 byte as OSU's do. float32 for any other name (scenarios).
// The one place the default lives: collbench-rank and api/ both ask it.
DataType DefaultDataType(absl::string_view operation);

// The one buffer of an in-place call (--in-place) on one rank: its size
// and where this rank's input lies in it (input_count elements from
// input_offset). The send pointer is the buffer plus the offset, as MPI
// (MPI_IN_PLACE) and nccl-tests lay it out: allreduce, reduce, bcast and
// alltoall at 0, allgather and gather's root at rank x count (gather's
// other ranks keep their count elements at 0).
// REQUIRES: op.traits.in_place.
struct InPlaceLayout {
  size_t buffer_count = 0;
  size_t input_offset = 0;
  size_t input_count = 0;
};
InPlaceLayout InPlaceLayoutOf(const OperationSpec& op, const OpContext& ctx);

// gemm's matrix side for `count` elements: the largest n with n*n <= count.
size_t GemmSide(size_t count);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_OPERATIONS_H_

// The operations collbench-rank measures, as vocabulary (DESIGN §2,
// Operations): each one's name, traits and the buffers it needs on one
// rank. The engine's Operation (worker/engine/collectives/operation.h)
// attaches what runs to an entry of this table; validation (api/) and the
// peak buffer computation read the same entries, so there is one owner of
// "what does gather allocate on the root".
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
};

enum class OpClass { kCollective, kPointToPoint, kCopy };

struct OpTraits {
  OpClass op_class = OpClass::kCollective;
  bool rooted = false;   // uses --root
  bool reduces = false;  // uses --redop
  bool needs_even_ranks = false;  // point-to-point pairs
  bool needs_device = false;      // h2d, d2h, d2d
  bool floats_only = false;       // gemm: float32 and float64
};

// Element counts of the two buffers on one rank. The driver allocates
// separate send and receive buffers (never in place) so validation sees
// what the library wrote.
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

// gemm's matrix side for `count` elements: the largest n with n*n <= count.
size_t GemmSide(size_t count);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_OPERATIONS_H_

// An Operation is one measurable thing (DESIGN §2, Operations): a
// collective, a point-to-point pattern or a host/device copy. Like
// nccl-tests, each one fills the same few slots (name, buffer sizes, input
// data and expected output, bandwidth, one iteration) and a single shared
// driver (sweep.h) owns the size sweep, timing, validation and reporting.
//
// Operations are stateless and shared; RegisterBuiltinOperations() fills an
// OperationRegistry explicitly from main.
#ifndef COLLBENCH_WORKER_ENGINE_COLLECTIVES_OPERATION_H_
#define COLLBENCH_WORKER_ENGINE_COLLECTIVES_OPERATION_H_

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/engine/types.h"

namespace collbench {

class Backend;
class DeviceRuntime;

// Everything one iteration of an operation depends on.
inline constexpr int kMaxWindow = 1024;

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

class Operation {
 public:
  virtual ~Operation() = default;

  virtual std::string name() const = 0;
  virtual OpTraits traits() const = 0;
  virtual OpBuffers Buffers(const OpContext& ctx) const = 0;

  // S in algbw = S / avg, in bytes; and busbw = algbw x BusFactor(nranks).
  // Both follow nccl-tests (DESIGN §2, Measurement conventions).
  virtual double AlgBytes(const OpContext& ctx) const = 0;
  virtual double BusFactor(int nranks) const = 0;
  // Factor applied to each measured iteration time before it is recorded:
  // 0.5 for latency, whose iteration is a round trip (OSU reports half).
  virtual double TimeScale() const { return 1.0; }

  // The value this rank's send buffer holds at element i (see pattern.h).
  virtual double InputValue(const OpContext& ctx, size_t i) const = 0;
  // The value the receive buffer must hold at element i after one call, or
  // nullopt where the result is unspecified (e.g. gather's recv off-root).
  virtual std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const = 0;

  // Runs one iteration. `send`/`recv` are the driver's buffers, sized as
  // Buffers() asked. `device` is null when the binary has no device runtime
  // in use; only copy operations need it.
  virtual absl::Status Run(Backend& backend, DeviceRuntime* device,
                           const OpContext& ctx, void* send, void* recv) const = 0;
};

class OperationRegistry {
 public:
  void Register(std::unique_ptr<Operation> op);
  // InvalidArgument listing the known operations when `name` is unknown.
  absl::StatusOr<const Operation*> Find(absl::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, std::unique_ptr<Operation>, std::less<>> ops_;
};

// bcast, gather, allreduce, allgather, reduce, reduce_scatter, alltoall,
// latency, bw, bibw, h2d, d2h, d2d, h2h, gemm.
void RegisterBuiltinOperations(OperationRegistry* registry);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_COLLECTIVES_OPERATION_H_

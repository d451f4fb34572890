// SPDX-License-Identifier: Apache-2.0
// An Operation is one measurable thing (docs/design/data-plane.md#operations): a
// collective, a point-to-point pattern or a host/device copy. Like
// nccl-tests, each one fills the same few slots (name, buffer sizes, input
// data and expected output, bandwidth, one iteration) and a single shared
// driver (sweep.h) owns the size sweep, timing, validation and reporting.
//
// The name, traits and buffer counts come from engine_spec's table; an
// Operation adds what runs. Operations are stateless and shared;
// RegisterBuiltinOperations() fills an OperationRegistry explicitly from main.
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
#include "engine_spec/operations.h"
#include "engine_spec/types.h"

namespace collbench {

class Backend;
class DeviceRuntime;

class Operation {
 public:
  virtual ~Operation() = default;

  // REQUIRES: `spec` is an entry of OperationSpecs() (it outlives this).
  explicit Operation(const OperationSpec& spec) : spec_(spec) {}

  // Name, traits and buffers are the table's (engine_spec/operations.h).
  std::string name() const { return spec_.name; }
  OpTraits traits() const { return spec_.traits; }
  OpBuffers Buffers(const OpContext& ctx) const { return spec_.buffers(ctx); }
  // The one buffer of an in-place call. REQUIRES: traits().in_place.
  InPlaceLayout InPlace(const OpContext& ctx) const { return InPlaceLayoutOf(spec_, ctx); }

  // S in algbw = S / avg, in bytes; and busbw = algbw x BusFactor(nranks).
  // Both follow nccl-tests (docs/design/data-plane.md#bandwidth).
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
  // Buffers() asked; in place (ctx.in_place) `recv` is InPlace()'s buffer
  // and `send` points into it at the input. `device` is null when the binary has no device runtime
  // in use; only copy operations need it.
  virtual absl::Status Run(Backend& backend, DeviceRuntime* device,
                           const OpContext& ctx, void* send, void* recv) const = 0;

 private:
  const OperationSpec& spec_;
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

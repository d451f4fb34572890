// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

// The root broadcasts from its send buffer; the others receive into their
// receive buffer, so a rank that received nothing is caught by the poison.
class Bcast final : public Operation {
 public:
  Bcast() : Operation(OperationSpecNamed("bcast")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype));
  }
  double BusFactor(int nranks) const override { return 1.0; }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return MovedValue(ctx.dtype, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    if (ctx.rank == ctx.root) return std::nullopt;
    return MovedValue(ctx.dtype, ctx.root, i);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.Bcast(ctx.rank == ctx.root ? send : recv, ctx.count, ctx.dtype,
                         ctx.root);
  }
};

}  // namespace

std::unique_ptr<Operation> NewBcastOperation() { return std::make_unique<Bcast>(); }

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

class Allreduce final : public Operation {
 public:
  Allreduce() : Operation(OperationSpecNamed("allreduce")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype));
  }
  double BusFactor(int nranks) const override {
    return 2.0 * (nranks - 1) / nranks;
  }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return ReductionInput(ctx.dtype, ctx.redop, ctx.nranks, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    return ReducedValue(ctx.dtype, ctx.redop, ctx.nranks, i);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.Allreduce(send, recv, ctx.count, ctx.dtype, ctx.redop);
  }
};

}  // namespace

std::unique_ptr<Operation> NewAllreduceOperation() {
  return std::make_unique<Allreduce>();
}

}  // namespace collbench

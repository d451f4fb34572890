// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

class Reduce final : public Operation {
 public:
  Reduce() : Operation(OperationSpecNamed("reduce")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype));
  }
  double BusFactor(int nranks) const override { return 1.0; }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return ReductionInput(ctx.dtype, ctx.redop, ctx.nranks, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    if (ctx.rank != ctx.root) return std::nullopt;
    return ReducedValue(ctx.dtype, ctx.redop, ctx.nranks, i);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.Reduce(send, recv, ctx.count, ctx.dtype, ctx.redop, ctx.root);
  }
};

}  // namespace

std::unique_ptr<Operation> NewReduceOperation() { return std::make_unique<Reduce>(); }

}  // namespace collbench

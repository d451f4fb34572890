// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

// Each rank contributes n blocks of `count`; rank r receives the reduction
// of every rank's block r.
class ReduceScatter final : public Operation {
 public:
  ReduceScatter() : Operation(OperationSpecNamed("reduce_scatter")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype) * ctx.nranks);
  }
  double BusFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return ReductionInput(ctx.dtype, ctx.redop, ctx.nranks, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    return ReducedValue(ctx.dtype, ctx.redop, ctx.nranks, ctx.rank * ctx.count + i);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.ReduceScatter(send, recv, ctx.count, ctx.dtype, ctx.redop);
  }
};

}  // namespace

std::unique_ptr<Operation> NewReduceScatterOperation() {
  return std::make_unique<ReduceScatter>();
}

}  // namespace collbench

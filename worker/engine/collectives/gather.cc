// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

// Every rank sends `count` elements; the root receives n blocks in rank
// order. Only the root allocates the receive buffer.
class Gather final : public Operation {
 public:
  Gather() : Operation(OperationSpecNamed("gather")) {}
  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype) * ctx.nranks);
  }
  double BusFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return MovedValue(ctx.dtype, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    if (ctx.rank != ctx.root) return std::nullopt;
    return MovedValue(ctx.dtype, static_cast<int>(i / ctx.count), i % ctx.count);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.Gather(send, recv, ctx.count, ctx.dtype, ctx.root);
  }
};

}  // namespace

std::unique_ptr<Operation> NewGatherOperation() { return std::make_unique<Gather>(); }

}  // namespace collbench

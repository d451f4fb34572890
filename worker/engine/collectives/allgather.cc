// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

class Allgather final : public Operation {
 public:
  Allgather() : Operation(OperationSpecNamed("allgather")) {}
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
    return MovedValue(ctx.dtype, static_cast<int>(i / ctx.count), i % ctx.count);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.Allgather(send, recv, ctx.count, ctx.dtype);
  }
};

}  // namespace

std::unique_ptr<Operation> NewAllgatherOperation() {
  return std::make_unique<Allgather>();
}

}  // namespace collbench

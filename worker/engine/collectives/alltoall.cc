// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/backend.h"
#include "worker/engine/collectives/collectives.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

// Block j of rank r's send buffer goes to rank j; rank q's receive block r
// is rank r's send block q.
class Alltoall final : public Operation {
 public:
  Alltoall() : Operation(OperationSpecNamed("alltoall")) {}
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
    const int source = static_cast<int>(i / ctx.count);
    return MovedValue(ctx.dtype, source, ctx.rank * ctx.count + i % ctx.count);
  }
  absl::Status Run(Backend& backend, DeviceRuntime*, const OpContext& ctx, void* send,
                   void* recv) const override {
    return backend.Alltoall(send, recv, ctx.count, ctx.dtype);
  }
};

}  // namespace

std::unique_ptr<Operation> NewAlltoallOperation() {
  return std::make_unique<Alltoall>();
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/collectives/copy.h"

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/cuda/device_runtime.h"
#include "engine_spec/pattern.h"

namespace collbench {
namespace {

class Copy final : public Operation {
 public:
  // The spaces of the two buffers are the table's (OperationSpecs()).
  explicit Copy(absl::string_view name) : Operation(OperationSpecNamed(name)) {}

  double AlgBytes(const OpContext& ctx) const override {
    return static_cast<double>(ctx.count * ElementSize(ctx.dtype));
  }
  double BusFactor(int) const override { return 1.0; }
  double InputValue(const OpContext& ctx, size_t i) const override {
    return MovedValue(ctx.dtype, ctx.rank, i);
  }
  std::optional<double> ExpectedValue(const OpContext& ctx, size_t i) const override {
    return MovedValue(ctx.dtype, ctx.rank, i);
  }

  // The copy is queued on the runtime's stream and waited for here: the
  // driver's Backend::Synchronize() knows nothing of this stream (the
  // backend may be plain `mpi`), and a copy's time must include its
  // completion.
  absl::Status Run(Backend&, DeviceRuntime* device, const OpContext& ctx, void* send,
                   void* recv) const override {
    const size_t bytes = ctx.count * ElementSize(ctx.dtype);
    if (!OnDevice()) {
      std::memcpy(recv, send, bytes);
      return absl::OkStatus();
    }
    if (device == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(name(), " needs a CUDA device, and none is in use"));
    }
    RETURN_IF_ERROR(device->CopyAsync(recv, send, bytes));
    return device->Synchronize();
  }

 private:
  bool OnDevice() const { return traits().needs_device; }
};

}  // namespace

void RegisterCopyOperations(OperationRegistry* registry) {
  for (const char* name : {"h2d", "d2h", "d2d", "h2h"}) {
    registry->Register(std::make_unique<Copy>(name));
  }
}

}  // namespace collbench

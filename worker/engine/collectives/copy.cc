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
#include "worker/engine/pattern.h"

namespace collbench {
namespace {

class Copy final : public Operation {
 public:
  Copy(std::string name, MemorySpace from, MemorySpace to)
      : name_(std::move(name)), from_(from), to_(to) {}

  std::string name() const override { return name_; }
  OpTraits traits() const override {
    return {.op_class = OpClass::kCopy, .needs_device = OnDevice()};
  }
  OpBuffers Buffers(const OpContext& ctx) const override {
    return {.send_count = ctx.count,
            .recv_count = ctx.count,
            .send_space = from_,
            .recv_space = to_};
  }
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
          absl::StrCat(name_, " needs a CUDA device, and none is in use"));
    }
    RETURN_IF_ERROR(device->CopyAsync(recv, send, bytes));
    return device->Synchronize();
  }

 private:
  bool OnDevice() const { return from_ == MemorySpace::kDevice || to_ == MemorySpace::kDevice; }

  const std::string name_;
  const MemorySpace from_;
  const MemorySpace to_;
};

}  // namespace

void RegisterCopyOperations(OperationRegistry* registry) {
  constexpr MemorySpace kHost = MemorySpace::kHost;
  constexpr MemorySpace kDevice = MemorySpace::kDevice;
  registry->Register(std::make_unique<Copy>("h2d", kHost, kDevice));
  registry->Register(std::make_unique<Copy>("d2h", kDevice, kHost));
  registry->Register(std::make_unique<Copy>("d2d", kDevice, kDevice));
  registry->Register(std::make_unique<Copy>("h2h", kHost, kHost));
}

}  // namespace collbench

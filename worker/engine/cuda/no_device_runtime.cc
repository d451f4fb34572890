// SPDX-License-Identifier: Apache-2.0
// DeviceRuntime for builds without CUDA (COLLBENCH_WITH_CUDA=OFF): every
// call fails with Unimplemented, so device backends, device memory and the
// copy operations report one clear line instead of crashing.
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/engine/cuda/device_runtime.h"

namespace collbench {
namespace {

constexpr char kNoCuda[] =
    "this collbench build has no CUDA support (rebuild with COLLBENCH_WITH_CUDA=ON)";

class NoDeviceRuntime final : public DeviceRuntime {
 public:
  bool built_with_cuda() const override { return false; }
  absl::Status Init(int) override { return absl::UnimplementedError(kNoCuda); }
  absl::StatusOr<void*> AllocateDevice(size_t) override {
    return absl::UnimplementedError(kNoCuda);
  }
  absl::StatusOr<void*> AllocatePinned(size_t) override {
    return absl::UnimplementedError(kNoCuda);
  }
  // Nothing can have been allocated, so there is nothing to free.
  void FreeDevice(void*) override {}
  void FreePinned(void*) override {}
  absl::Status CopyAsync(void*, const void*, size_t) override {
    return absl::UnimplementedError(kNoCuda);
  }
  absl::Status Copy(void*, const void*, size_t) override {
    return absl::UnimplementedError(kNoCuda);
  }
  absl::Status Synchronize() override { return absl::UnimplementedError(kNoCuda); }
  void* stream() const override { return nullptr; }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo() override {
    return absl::UnimplementedError(kNoCuda);
  }
  std::string Describe() override { return kNoCuda; }
};

}  // namespace

std::unique_ptr<DeviceRuntime> NewDeviceRuntime() {
  return std::make_unique<NoDeviceRuntime>();
}

}  // namespace collbench

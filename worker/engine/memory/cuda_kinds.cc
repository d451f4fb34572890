// SPDX-License-Identifier: Apache-2.0
// `--memory pinned` (page-locked host memory, cudaHostAlloc) and
// `--memory device` (cudaMalloc), both through the DeviceRuntime interface
// only, so they compile in builds with and without CUDA.
//
// The caller initialises the runtime (DeviceRuntime::Init with its local
// rank) before it checks or allocates memory; these kinds never choose a
// device themselves. CheckAvailable() therefore asks the runtime for one
// small allocation and frees it again: that is the only question the
// interface can answer without knowing the rank, and it fails exactly when
// real allocations would (no runtime, a build without CUDA, Init failed
// because there is no GPU, driver trouble). Every failure there is reported
// as FailedPrecondition carrying the runtime's own message.
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/memory/memory_kind.h"

namespace collbench {
namespace {

constexpr size_t kProbeBytes = 64;

// What differs between pinned and device memory.
struct CudaKindTraits {
  const char* name;
  MemorySpace space;
  absl::StatusOr<void*> (DeviceRuntime::*allocate)(size_t);
  void (DeviceRuntime::*free)(void*);
};

constexpr CudaKindTraits kPinned = {"pinned", MemorySpace::kHost,
                                    &DeviceRuntime::AllocatePinned,
                                    &DeviceRuntime::FreePinned};
constexpr CudaKindTraits kDevice = {"device", MemorySpace::kDevice,
                                    &DeviceRuntime::AllocateDevice,
                                    &DeviceRuntime::FreeDevice};

class CudaMemoryKind final : public MemoryKind {
 public:
  // `device` may be null; the kind then reports itself unavailable.
  CudaMemoryKind(const CudaKindTraits& traits, DeviceRuntime* device)
      : traits_(traits), device_(device) {}

  std::string name() const override { return traits_.name; }
  MemorySpace space() const override { return traits_.space; }

  absl::Status CheckAvailable() override {
    RETURN_IF_ERROR(HasRuntime());
    absl::StatusOr<void*> probe = (device_->*traits_.allocate)(kProbeBytes);
    if (!probe.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--memory ", traits_.name, ": ", probe.status().message()));
    }
    (device_->*traits_.free)(*probe);
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    RETURN_IF_ERROR(HasRuntime());
    return (device_->*traits_.allocate)(bytes);
  }

  void Free(void* ptr, size_t /*bytes*/) override {
    (device_->*traits_.free)(ptr);
  }

 private:
  absl::Status HasRuntime() const {
    if (device_ == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("--memory ", traits_.name, " needs a CUDA device"));
    }
    if (!device_->built_with_cuda()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--memory ", traits_.name,
          " needs a CUDA device; this binary was built without CUDA"));
    }
    return absl::OkStatus();
  }

  const CudaKindTraits& traits_;
  DeviceRuntime* const device_;
};

void RegisterCudaKind(MemoryKindRegistry* registry,
                      const CudaKindTraits& traits) {
  const CudaKindTraits* kind_traits = &traits;
  registry->Register(traits.name,
                     [kind_traits](absl::string_view, DeviceRuntime* device)
                         -> absl::StatusOr<std::unique_ptr<MemoryKind>> {
                       return std::make_unique<CudaMemoryKind>(*kind_traits,
                                                               device);
                     });
}

}  // namespace

void RegisterCudaMemoryKinds(MemoryKindRegistry* registry) {
  RegisterCudaKind(registry, kPinned);
  RegisterCudaKind(registry, kDevice);
}

}  // namespace collbench

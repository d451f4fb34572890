// SPDX-License-Identifier: Apache-2.0
// DeviceRuntime over the CUDA runtime API (host code only; linked with the
// static cudart so the binary loads where no driver is installed, and then
// reports "no CUDA device" from Init()).
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/cuda/cuda_status.h"
#include "worker/engine/cuda/device_runtime.h"

namespace collbench {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string CudaVersionText(int version) {
  if (version <= 0) return "none";
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

std::string VersionsText() {
  int driver = 0;
  int runtime = 0;
  // Both calls work without a device; failures leave the zeros.
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  return absl::StrCat("driver ", CudaVersionText(driver), ", runtime ",
                      CudaVersionText(runtime));
}

// cudaGetDeviceCount's failure, with what it usually means on a machine
// without a GPU: the static runtime finds no libcuda.so at all.
std::string NoDeviceReason(cudaError_t rc) {
  if (rc != cudaErrorInsufficientDriver) return cudaGetErrorString(rc);
  int runtime = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  return absl::StrCat(cudaGetErrorString(rc),
                      " (no NVIDIA driver, or one older than CUDA ",
                      CudaVersionText(runtime), ")");
}

class CudaDeviceRuntime final : public DeviceRuntime {
 public:
  CudaDeviceRuntime() = default;
  CudaDeviceRuntime(const CudaDeviceRuntime&) = delete;
  CudaDeviceRuntime& operator=(const CudaDeviceRuntime&) = delete;
  ~CudaDeviceRuntime() override {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  bool built_with_cuda() const override { return true; }

  absl::Status Init(int local_rank) override;
  absl::StatusOr<void*> AllocateDevice(size_t bytes) override;
  absl::StatusOr<void*> AllocatePinned(size_t bytes) override;
  void FreeDevice(void* ptr) override;
  void FreePinned(void* ptr) override;
  absl::Status CopyAsync(void* dst, const void* src, size_t bytes) override;
  absl::Status Copy(void* dst, const void* src, size_t bytes) override;
  absl::Status Synchronize() override;
  void* stream() const override { return stream_; }
  absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo() override;
  std::string Describe() override;

 private:
  absl::Status CheckInitialized() const;

  bool initialized_ = false;
  int device_ = -1;
  int device_count_ = 0;
  cudaStream_t stream_ = nullptr;
};

absl::Status CudaDeviceRuntime::Init(int local_rank) {
  if (initialized_) return absl::OkStatus();
  if (local_rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("local rank must be >= 0, got ", local_rank));
  }
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device: ", NoDeviceReason(rc)));
  }
  if (count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device: ", cudaGetErrorString(cudaErrorNoDevice)));
  }
  const int device = local_rank % count;
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  // Non-blocking: the benchmark stream must not serialise with the legacy
  // default stream that libraries may use internally.
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  device_ = device;
  device_count_ = count;
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status CudaDeviceRuntime::CheckInitialized() const {
  if (initialized_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "CUDA device runtime used before Init() selected a device");
}

absl::StatusOr<void*> CudaDeviceRuntime::AllocateDevice(size_t bytes) {
  RETURN_IF_ERROR(CheckInitialized());
  void* ptr = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, bytes));
  return ptr;
}

absl::StatusOr<void*> CudaDeviceRuntime::AllocatePinned(size_t bytes) {
  RETURN_IF_ERROR(CheckInitialized());
  void* ptr = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable));
  return ptr;
}

// Frees cannot report failure through the interface; a failing free means
// the context is already broken, which the next call reports.
void CudaDeviceRuntime::FreeDevice(void* ptr) {
  if (ptr != nullptr) (void)cudaFree(ptr);
}

void CudaDeviceRuntime::FreePinned(void* ptr) {
  if (ptr != nullptr) (void)cudaFreeHost(ptr);
}

absl::Status CudaDeviceRuntime::CopyAsync(void* dst, const void* src, size_t bytes) {
  RETURN_IF_ERROR(CheckInitialized());
  if (bytes == 0) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  return absl::OkStatus();
}

absl::Status CudaDeviceRuntime::Copy(void* dst, const void* src, size_t bytes) {
  RETURN_IF_ERROR(CopyAsync(dst, src, bytes));
  return Synchronize();
}

absl::Status CudaDeviceRuntime::Synchronize() {
  RETURN_IF_ERROR(CheckInitialized());
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::StatusOr<std::pair<size_t, size_t>> CudaDeviceRuntime::MemoryInfo() {
  RETURN_IF_ERROR(CheckInitialized());
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  return std::make_pair(free_bytes, total_bytes);
}

std::string CudaDeviceRuntime::Describe() {
  if (!initialized_) {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
      return absl::StrCat("no CUDA device: ", NoDeviceReason(rc), "; ", VersionsText());
    }
    return absl::StrCat(count, " CUDA device(s), none selected yet (",
                        VersionsText(), ")");
  }
  cudaDeviceProp prop{};
  const cudaError_t rc = cudaGetDeviceProperties(&prop, device_);
  const std::string name =
      rc == cudaSuccess ? std::string(prop.name)
                        : absl::StrCat("unknown device (", cudaGetErrorString(rc), ")");
  return absl::StrCat(name, " (device ", device_, " of ", device_count_, ", ",
                      VersionsText(), ")");
}

}  // namespace

std::unique_ptr<DeviceRuntime> NewDeviceRuntime() {
  return std::make_unique<CudaDeviceRuntime>();
}

}  // namespace collbench

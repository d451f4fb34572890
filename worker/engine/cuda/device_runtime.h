// SPDX-License-Identifier: Apache-2.0
// The engine's view of a GPU: allocation, copies and stream completion.
//
// Two implementations: the CUDA one (cuda_runtime.cc, built when the toolkit
// is found) and the one for builds without CUDA (no_device_runtime.cc), whose
// every call fails with Unimplemented ("built without CUDA"). On a machine
// with the CUDA build but no GPU, Init() fails with FailedPrecondition and a
// one-line message ("no CUDA device: ...").
//
// Every call goes to one CUDA stream owned by the runtime. Calls that fail
// return a Status naming the CUDA call, CUDA's error text and file:line.
// Thread safety: one thread (the rank's main thread) uses a runtime.
#ifndef COLLBENCH_WORKER_ENGINE_CUDA_DEVICE_RUNTIME_H_
#define COLLBENCH_WORKER_ENGINE_CUDA_DEVICE_RUNTIME_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace collbench {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // True when this binary was built with CUDA.
  virtual bool built_with_cuda() const = 0;

  // Selects the device for this process (local_rank modulo the device count)
  // and creates the stream. Idempotent. Must succeed before any other call.
  virtual absl::Status Init(int local_rank) = 0;

  // Device memory (cudaMalloc) and pinned host memory (cudaHostAlloc).
  virtual absl::StatusOr<void*> AllocateDevice(size_t bytes) = 0;
  virtual absl::StatusOr<void*> AllocatePinned(size_t bytes) = 0;
  virtual void FreeDevice(void* ptr) = 0;
  virtual void FreePinned(void* ptr) = 0;

  // Asynchronous copy on the runtime's stream in any direction
  // (cudaMemcpyDefault); Synchronize() waits for it.
  virtual absl::Status CopyAsync(void* dst, const void* src, size_t bytes) = 0;
  // Copy that has completed when the call returns.
  virtual absl::Status Copy(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status Synchronize() = 0;

  // The cudaStream_t the runtime owns, for NCCL. nullptr before Init().
  virtual void* stream() const = 0;

  // Free and total device memory in bytes, for the fit check.
  virtual absl::StatusOr<std::pair<size_t, size_t>> MemoryInfo() = 0;

  // "NVIDIA H100 80GB HBM3 (device 0 of 8, driver 13.0)" or why there is none.
  virtual std::string Describe() = 0;
};

// The CUDA runtime when built with CUDA, else the stub.
std::unique_ptr<DeviceRuntime> NewDeviceRuntime();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_CUDA_DEVICE_RUNTIME_H_

// SPDX-License-Identifier: Apache-2.0
// CUDA runtime return codes as absl::Status (CONTRIBUTING.md#style): the message names
// the failing call, CUDA's error text and file:line, on one line, e.g.
//   cudaMalloc(&ptr, bytes) failed: out of memory (cudaErrorMemoryAllocation)
//   [worker/engine/cuda/cuda_runtime.cc:57]
//
// Header-only so that every module that talks to CUDA can use it without
// another library. NCCL's codes go through the library NCCL was loaded from
// (nccl/nccl_library.h: NcclLibrary::StatusOf, NCCL_RETURN_IF_ERROR).
#ifndef COLLBENCH_WORKER_ENGINE_CUDA_CUDA_STATUS_H_
#define COLLBENCH_WORKER_ENGINE_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace cuda_status_internal {

inline absl::StatusCode CudaErrorCode(cudaError_t code) {
  switch (code) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
      return absl::StatusCode::kFailedPrecondition;
    case cudaErrorInvalidValue:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace cuda_status_internal

// OK for cudaSuccess, else a Status naming `call` and the site.
inline absl::Status CudaStatus(cudaError_t code, const char* call,
                               const char* file, int line) {
  if (code == cudaSuccess) return absl::OkStatus();
  return absl::Status(
      cuda_status_internal::CudaErrorCode(code),
      absl::StrCat(call, " failed: ", cudaGetErrorString(code), " (",
                   cudaGetErrorName(code), ") [", file, ":", line, "]"));
}

}  // namespace collbench

// Evaluates a CUDA runtime call and returns its failure as a Status.
#define CUDA_RETURN_IF_ERROR(call)                                        \
  do {                                                                    \
    const cudaError_t collbench_cuda_rc_ = (call);                        \
    if (collbench_cuda_rc_ != cudaSuccess) {                              \
      return ::collbench::CudaStatus(collbench_cuda_rc_, #call, __FILE__, \
                                     __LINE__);                           \
    }                                                                     \
  } while (false)

#endif  // COLLBENCH_WORKER_ENGINE_CUDA_CUDA_STATUS_H_

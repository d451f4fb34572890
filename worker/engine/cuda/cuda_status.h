// CUDA runtime and NCCL return codes as absl::Status (STYLE §4): the message
// names the failing call, the library's error text and file:line, on one
// line, e.g.
//   cudaMalloc(&ptr, bytes) failed: out of memory (cudaErrorMemoryAllocation)
//   [worker/engine/cuda/cuda_runtime.cc:57]
//
// Header-only so that every module that talks to CUDA or NCCL can use it
// without another library. The NCCL half is available wherever <nccl.h> is
// on the include path (the MPI engine libraries, which link collbench::nccl).
#ifndef COLLBENCH_WORKER_ENGINE_CUDA_CUDA_STATUS_H_
#define COLLBENCH_WORKER_ENGINE_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
#define COLLBENCH_HAVE_NCCL_STATUS 1
#endif

namespace collbench {
namespace cuda_status_internal {

// Library messages may end in or contain newlines; a Status is one line.
inline std::string OneLine(absl::string_view text) {
  return absl::StrReplaceAll(absl::StripAsciiWhitespace(text), {{"\n", "; "}});
}

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

#ifdef COLLBENCH_HAVE_NCCL_STATUS

namespace cuda_status_internal {

inline absl::StatusCode NcclErrorCode(ncclResult_t code) {
  switch (code) {
    case ncclInvalidArgument:
      return absl::StatusCode::kInvalidArgument;
    case ncclInvalidUsage:
      return absl::StatusCode::kFailedPrecondition;
    case ncclSystemError:
    case ncclRemoteError:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace cuda_status_internal

// OK for ncclSuccess, else a Status naming `call`, NCCL's text for the code
// and, when NCCL kept one, its more specific last-error message.
inline absl::Status NcclStatus(ncclResult_t code, const char* call,
                               const char* file, int line) {
  if (code == ncclSuccess) return absl::OkStatus();
  std::string message = absl::StrCat(call, " failed: ", ncclGetErrorString(code));
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') {
    absl::StrAppend(&message, ": ", cuda_status_internal::OneLine(last));
  }
  absl::StrAppend(&message, " [", file, ":", line, "]");
  return absl::Status(cuda_status_internal::NcclErrorCode(code), message);
}

#endif  // COLLBENCH_HAVE_NCCL_STATUS

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

#ifdef COLLBENCH_HAVE_NCCL_STATUS
// Evaluates an NCCL call and returns its failure as a Status.
#define NCCL_RETURN_IF_ERROR(call)                                        \
  do {                                                                    \
    const ncclResult_t collbench_nccl_rc_ = (call);                       \
    if (collbench_nccl_rc_ != ncclSuccess) {                              \
      return ::collbench::NcclStatus(collbench_nccl_rc_, #call, __FILE__, \
                                     __LINE__);                           \
    }                                                                     \
  } while (false)
#endif  // COLLBENCH_HAVE_NCCL_STATUS

#endif  // COLLBENCH_WORKER_ENGINE_CUDA_CUDA_STATUS_H_

// SPDX-License-Identifier: Apache-2.0
// mpi-cuda: the `mpi` backend handed device pointers. Only a CUDA-aware MPI
// can take them; anything else would crash inside the library or silently
// read host memory at the device address, so the factory asks the library
// at run time and refuses cleanly when it says no.
//
// Compiled once per MPI library (COLLBENCH_MPI_FLAVOR is "openmpi" or
// "mpich"); the query is chosen by what that library's headers declare:
//   Open MPI  <mpi-ext.h> cuda extension: MPIX_Query_cuda_support()
//   MPICH     MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported)
#include <mpi.h>

#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/engine/backends/backend.h"
#include "worker/engine/backends/device_backends.h"
#include "worker/engine/backends/mpi_backend.h"
#include "worker/engine/cuda/device_runtime.h"
#include "worker/engine/mpi/mpi_status.h"

namespace collbench {
namespace {

// What the library answered and how it was asked, for the error message.
struct CudaAwareness {
  bool supported = false;
  std::string query;
};

// The MPI library this file was compiled against, e.g. "Open MPI 4.1.4".
std::string MpiLibraryName() {
#if defined(OPEN_MPI)
  return absl::StrCat("Open MPI ", OMPI_MAJOR_VERSION, ".", OMPI_MINOR_VERSION, ".",
                      OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return absl::StrCat("MPICH ", MPICH_VERSION);
#else
  return "this MPI library";
#endif
}

absl::StatusOr<CudaAwareness> QueryCudaAwareness() {
  CudaAwareness answer;
#if defined(OMPI_HAVE_MPI_EXT_CUDA)
  // The run-time answer covers both a library built without CUDA and one
  // built with it but running with CUDA support disabled.
  answer.supported = MPIX_Query_cuda_support() == 1;
  answer.query = "MPIX_Query_cuda_support() returned 0";
#elif defined(MPICH) && defined(MPIX_GPU_SUPPORT_CUDA)
  int supported = 0;
  MPI_RETURN_IF_ERROR(MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported));
  answer.supported = supported != 0;
  answer.query = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) reports no support";
#else
  answer.query = "its headers offer no CUDA-support query";
#endif
  return answer;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> NewMpiCudaBackend(MPI_Comm comm,
                                                           DeviceRuntime* device) {
  // The library is asked first: its answer does not depend on the machine
  // having a GPU, and it is the more useful message.
  ASSIGN_OR_RETURN(CudaAwareness awareness, QueryCudaAwareness());
  if (!awareness.supported) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--backend mpi-cuda needs a CUDA-aware MPI, but ", MpiLibraryName(),
        " is not CUDA-aware (", awareness.query,
        "); use --backend mpi-staged or --backend nccl"));
  }
  if (device == nullptr || device->stream() == nullptr) {
    return absl::FailedPreconditionError(
        "--backend mpi-cuda needs an initialised CUDA device runtime");
  }
  return NewMpiBackend(comm, "mpi-cuda", MemorySpace::kDevice);
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The `mpi` backend: MPI collectives and point-to-point on host memory. The
// device backends build on it: mpi-staged wraps it with copies, mpi-cuda
// hands it device pointers.
#ifndef COLLBENCH_WORKER_ENGINE_BACKENDS_MPI_BACKEND_H_
#define COLLBENCH_WORKER_ENGINE_BACKENDS_MPI_BACKEND_H_

#include <mpi.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "worker/engine/backends/backend.h"

namespace collbench {

// `comm` is borrowed and must outlive the backend. `name` and `space` let
// mpi-cuda reuse the implementation for device pointers.
std::unique_ptr<Backend> NewMpiBackend(MPI_Comm comm, std::string name = "mpi",
                                       MemorySpace space = MemorySpace::kHost);

// host-staged: every call copies its inputs into staging buffers, runs the
// `mpi` backend on those and copies the results back (memcpy standing in for
// cudaMemcpy), as mpi-staged does around a GPU. Built in every build
// (backends/mpi_staged_backend.cc).
absl::StatusOr<std::unique_ptr<Backend>> NewHostStagedBackend(MPI_Comm comm);

// mpi-object: the serialized-object message path (serialize, send the
// bytes, deserialize; reductions after deserialization), as mpi4py's
// lower-case methods move objects (backends/mpi_object_backend.cc).
std::unique_ptr<Backend> NewMpiObjectBackend(MPI_Comm comm);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_BACKENDS_MPI_BACKEND_H_

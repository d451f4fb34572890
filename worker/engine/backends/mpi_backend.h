// The `mpi` backend: MPI collectives and point-to-point on host memory. The
// device backends build on it: mpi-staged wraps it with copies, mpi-cuda
// hands it device pointers.
#ifndef COLLBENCH_WORKER_ENGINE_BACKENDS_MPI_BACKEND_H_
#define COLLBENCH_WORKER_ENGINE_BACKENDS_MPI_BACKEND_H_

#include <mpi.h>

#include <memory>
#include <string>

#include "worker/engine/backends/backend.h"

namespace collbench {

// `comm` is borrowed and must outlive the backend. `name` and `space` let
// mpi-cuda reuse the implementation for device pointers.
std::unique_ptr<Backend> NewMpiBackend(MPI_Comm comm, std::string name = "mpi",
                                       MemorySpace space = MemorySpace::kHost);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_BACKENDS_MPI_BACKEND_H_

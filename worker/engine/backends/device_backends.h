// SPDX-License-Identifier: Apache-2.0
// The backends whose buffers live in GPU memory (docs/design/data-plane.md#backends):
//
//   mpi-staged  device -> pinned host copy, MPI on host, host -> device copy
//               (what a non-CUDA-aware MPI costs);
//   mpi-cuda    MPI directly on device pointers, only where the MPI library
//               reports CUDA support at run time;
//   nccl        NCCL collectives on the device runtime's stream.
//
// Compiled once per MPI library and only in CUDA builds; builtin.cc
// registers them (with built=false when COLLBENCH_WITH_CUDA is off).
//
// Every factory borrows `comm` and `device`, which must outlive the backend.
// REQUIRES: device->Init() has succeeded. Backends are used by one thread.
#ifndef COLLBENCH_WORKER_ENGINE_BACKENDS_DEVICE_BACKENDS_H_
#define COLLBENCH_WORKER_ENGINE_BACKENDS_DEVICE_BACKENDS_H_

#include <mpi.h>

#include <memory>

#include "absl/status/statusor.h"
#include "worker/engine/backends/backend.h"

namespace collbench {

class DeviceRuntime;
class MpiCommunicator;

// mpi-staged. Pinned staging buffers are grown on demand and reused across
// calls; every call leaves its device results queued on the runtime's
// stream, which Synchronize() waits for. float16/bfloat16 are rejected as
// by the `mpi` backend.
absl::StatusOr<std::unique_ptr<Backend>> NewMpiStagedBackend(MPI_Comm comm,
                                                             DeviceRuntime* device);

// mpi-cuda. FailedPrecondition naming the MPI library, and suggesting
// --backend mpi-staged or nccl, when the library is not CUDA-aware.
absl::StatusOr<std::unique_ptr<Backend>> NewMpiCudaBackend(MPI_Comm comm,
                                                           DeviceRuntime* device);

// nccl. Collective over `comm`: every rank must call it, in the same order
// as its other collectives (rank 0 broadcasts the NCCL unique id over MPI).
// One GPU per rank (NCCL refuses two ranks on one device).
absl::StatusOr<std::unique_ptr<Backend>> NewNcclBackend(MpiCommunicator& comm,
                                                        DeviceRuntime* device);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_BACKENDS_DEVICE_BACKENDS_H_

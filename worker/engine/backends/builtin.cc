// SPDX-License-Identifier: Apache-2.0
// Attaches this binary's factories to engine_spec's backend table. Compiled
// once per MPI library; the device backends exist only in CUDA builds, and
// the registry says why `--backend nccl` cannot run otherwise.
#include "worker/engine/backends/mpi_backend.h"
#include "worker/engine/backends/registry.h"
#include "worker/engine/mpi/mpi_communicator.h"

#ifdef COLLBENCH_WITH_CUDA
#include "worker/engine/backends/device_backends.h"
#endif

namespace collbench {
namespace {

// REQUIRES: the context's communicator is this build's MpiCommunicator
// (rank_main.cc creates nothing else).
MpiCommunicator& Mpi(const BackendContext& context) {
  return *static_cast<MpiCommunicator*>(context.comm);
}

}  // namespace

void RegisterBuiltinBackends(BackendRegistry* registry) {
  registry->Register("mpi", [](const BackendContext& c) -> absl::StatusOr<std::unique_ptr<Backend>> {
    return NewMpiBackend(Mpi(c).handle());
  });
  registry->Register("host-staged",
                     [](const BackendContext& c) { return NewHostStagedBackend(Mpi(c).handle()); });
  registry->Register("mpi-object",
                     [](const BackendContext& c) -> absl::StatusOr<std::unique_ptr<Backend>> {
                       return NewMpiObjectBackend(Mpi(c).handle());
                     });
#ifdef COLLBENCH_WITH_CUDA
  registry->Register("mpi-staged", [](const BackendContext& c) {
    return NewMpiStagedBackend(Mpi(c).handle(), c.device);
  });
  registry->Register("mpi-cuda", [](const BackendContext& c) {
    return NewMpiCudaBackend(Mpi(c).handle(), c.device);
  });
  registry->Register(kNcclBackend,
                     [](const BackendContext& c) { return NewNcclBackend(Mpi(c), c.device); });
#endif
}

}  // namespace collbench

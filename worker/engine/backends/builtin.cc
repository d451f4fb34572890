// Registers the backends this binary was built with. Compiled once per MPI
// library; the device backends exist only in CUDA builds and are listed as
// not built otherwise, so `--backend nccl` says why it cannot run.
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

constexpr char kNoCuda[] = "this build has no CUDA support; rebuild with COLLBENCH_WITH_CUDA=ON";

}  // namespace

void RegisterBuiltinBackends(BackendRegistry* registry) {
  registry->Register(
      {"mpi", MemorySpace::kHost, true, "MPI collectives on host memory"},
      [](const BackendContext& c) -> absl::StatusOr<std::unique_ptr<Backend>> {
        return NewMpiBackend(Mpi(c).handle());
      });
  registry->Register({"host-staged", MemorySpace::kHost, true,
                      "host buffers copied through staging buffers around MPI calls (the "
                      "cudaMemcpy stand-in without a GPU)"},
                     [](const BackendContext& c) { return NewHostStagedBackend(Mpi(c).handle()); });
  registry->Register({"mpi-object", MemorySpace::kHost, true,
                      "every message serialized, sent as bytes and deserialized; reductions "
                      "after deserialization (the object path of mpi4py's lower-case calls)"},
                     [](const BackendContext& c) -> absl::StatusOr<std::unique_ptr<Backend>> {
                       return NewMpiObjectBackend(Mpi(c).handle());
                     });
#ifdef COLLBENCH_WITH_CUDA
  registry->Register({"mpi-staged", MemorySpace::kDevice, true,
                      "device buffers copied to host around MPI calls"},
                     [](const BackendContext& c) {
                       return NewMpiStagedBackend(Mpi(c).handle(), c.device);
                     });
  registry->Register({"mpi-cuda", MemorySpace::kDevice, true,
                      "MPI on device pointers (needs a CUDA-aware MPI)"},
                     [](const BackendContext& c) {
                       return NewMpiCudaBackend(Mpi(c).handle(), c.device);
                     });
  registry->Register({"nccl", MemorySpace::kDevice, true, "NCCL collectives on device memory"},
                     [](const BackendContext& c) { return NewNcclBackend(Mpi(c), c.device); });
#else
  for (const char* name : {"mpi-staged", "mpi-cuda", "nccl"}) {
    registry->Register({name, MemorySpace::kDevice, false, kNoCuda},
                       [](const BackendContext&) -> absl::StatusOr<std::unique_ptr<Backend>> {
                         return absl::UnimplementedError(kNoCuda);
                       });
  }
#endif
}

}  // namespace collbench

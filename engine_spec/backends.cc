// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/backends.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {

const std::vector<BackendSpec>& BackendSpecs() {
  static const auto* specs = new std::vector<BackendSpec>{
      {"mpi", MemorySpace::kHost, false, "MPI collectives on host memory", InPlaceForm::kMpi},
      {"host-staged", MemorySpace::kHost, false,
       "host buffers copied through staging buffers around MPI calls (the cudaMemcpy "
       "stand-in without a GPU)"},
      {"mpi-object", MemorySpace::kHost, false,
       "every message serialized, sent as bytes and deserialized; reductions after "
       "deserialization (the object path of mpi4py's lower-case calls)"},
      {"mpi-staged", MemorySpace::kDevice, true, "device buffers copied to host around MPI calls"},
      {"mpi-cuda", MemorySpace::kDevice, true, "MPI on device pointers (needs a CUDA-aware MPI)",
       InPlaceForm::kMpi},
      {kNcclBackend, MemorySpace::kDevice, true, "NCCL collectives on device memory",
       InPlaceForm::kNccl},
  };
  return *specs;
}

std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (const BackendSpec& spec : BackendSpecs()) names.emplace_back(spec.name);
  return names;
}

const BackendSpec* FindBackendSpec(absl::string_view name) {
  for (const BackendSpec& spec : BackendSpecs()) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

const std::vector<StrategySpec>& StrategySpecs() {
  static const auto* specs = new std::vector<StrategySpec>{
      {"host", Strategy::kHost, "mpi"},
      {"mpi-staged", Strategy::kMpiStaged, "mpi-staged"},
      {"nccl-chief", Strategy::kNcclChief, kNcclBackend},
      {"mpi-cuda", Strategy::kMpiCuda, "mpi-cuda"},
  };
  return *specs;
}

std::vector<std::string> StrategyNames() {
  std::vector<std::string> names;
  for (const StrategySpec& spec : StrategySpecs()) names.emplace_back(spec.name);
  return names;
}

absl::StatusOr<const StrategySpec*> ResolveStrategy(absl::string_view strategy,
                                                    absl::string_view backend) {
  std::vector<std::string> backends;
  for (const StrategySpec& spec : StrategySpecs()) {
    if (strategy.empty() ? backend == spec.worker_backend : strategy == spec.name) return &spec;
    backends.emplace_back(spec.worker_backend);
  }
  if (strategy.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend '", backend, "' has no parameter-server strategy; valid values: ",
        absl::StrJoin(backends, ", "), " (or give --strategy)"));
  }
  return absl::InvalidArgumentError(absl::StrCat("--strategy '", strategy,
                                                 "' is unknown; valid values: ",
                                                 absl::StrJoin(StrategyNames(), ", ")));
}

}  // namespace collbench

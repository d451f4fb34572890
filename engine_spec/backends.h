// SPDX-License-Identifier: Apache-2.0
// The one table of backends (the library that moves the bytes, docs/design/data-plane.md#backends)
// and of the parameter-server strategies, as metadata: names, where the
// buffers live, whether the backend needs a CUDA build, what it is. The
// engine attaches a factory to each entry (worker/engine/backends/builtin.cc),
// the agent's inventory lists the built ones and api/ validates names
// against it.
//
// Thread-safe: the tables are immutable.
#ifndef COLLBENCH_ENGINE_SPEC_BACKENDS_H_
#define COLLBENCH_ENGINE_SPEC_BACKENDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine_spec/types.h"

namespace collbench {

// The in-place form a backend's collectives take (--in-place): none (it
// stages or serializes every buffer, so there is no one buffer to share),
// MPI's MPI_IN_PLACE, or NCCL's same pointer.
enum class InPlaceForm { kNone, kMpi, kNccl };

struct BackendSpec {
  const char* name;
  MemorySpace space;  // where its collectives' buffers live
  bool needs_cuda;    // exists only in builds with CUDA
  const char* description;
  InPlaceForm in_place = InPlaceForm::kNone;
};

// mpi, host-staged, mpi-object, mpi-staged, mpi-cuda, nccl, in that order.
const std::vector<BackendSpec>& BackendSpecs();
std::vector<std::string> BackendNames();
// The entry named `name`, or nullptr.
const BackendSpec* FindBackendSpec(absl::string_view name);

// The name of the one backend whose collectives carry 16-bit floats.
inline constexpr char kNcclBackend[] = "nccl";

// parameter-server's strategies (engine_spec/scenarios.h). The order gives
// each strategy's "strategy_code" in the size records.
enum class Strategy { kHost, kMpiStaged, kNcclChief, kMpiCuda };
struct StrategySpec {
  const char* name;
  Strategy strategy;
  const char* worker_backend;  // also the --backend that selects it by default
};
// host, mpi-staged, nccl-chief, mpi-cuda.
const std::vector<StrategySpec>& StrategySpecs();
std::vector<std::string> StrategyNames();

// The strategy `strategy` names, or when it is empty the one `backend`
// selects by default. InvalidArgument naming --strategy or --backend.
absl::StatusOr<const StrategySpec*> ResolveStrategy(absl::string_view strategy,
                                                    absl::string_view backend);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_BACKENDS_H_

// SPDX-License-Identifier: Apache-2.0
// Backends by `--backend` name: the entries of engine_spec's table
// (engine_spec/backends.h) with the factories this binary attaches,
// explicitly, in RegisterBuiltinBackends() (backends/builtin.cc, compiled
// once per MPI library) from main. An entry without a factory is compiled
// out (a build without CUDA).
#ifndef COLLBENCH_WORKER_ENGINE_BACKENDS_REGISTRY_H_
#define COLLBENCH_WORKER_ENGINE_BACKENDS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "engine_spec/backends.h"
#include "worker/engine/backends/backend.h"

namespace collbench {

class Communicator;
class DeviceRuntime;

struct BackendContext {
  // The ranks the backend spans. For the MPI-based backends this must be
  // the MpiCommunicator of the same MPI library the backend was built with.
  Communicator* comm = nullptr;
  DeviceRuntime* device = nullptr;  // Init() already called for device backends
};

using BackendFactory =
    std::function<absl::StatusOr<std::unique_ptr<Backend>>(const BackendContext&)>;

class BackendRegistry {
 public:
  // REQUIRES: `name` is in BackendSpecs().
  void Register(absl::string_view name, BackendFactory factory);
  // InvalidArgument for an unknown name (listing the known ones),
  // Unimplemented for a backend this binary was built without.
  absl::StatusOr<std::unique_ptr<Backend>> Create(absl::string_view name,
                                                  const BackendContext& context) const;
  // The table's entry. Unknown name: InvalidArgument; compiled out:
  // Unimplemented.
  absl::StatusOr<const BackendSpec*> Info(absl::string_view name) const;

 private:
  std::map<std::string, BackendFactory, std::less<>> factories_;
};

// mpi, host-staged, mpi-object; mpi-staged, mpi-cuda and nccl in CUDA
// builds only.
void RegisterBuiltinBackends(BackendRegistry* registry);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_BACKENDS_REGISTRY_H_

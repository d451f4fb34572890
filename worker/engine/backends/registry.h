// Backends by `--backend` name, filled explicitly by
// RegisterBuiltinBackends() (backends/builtin.cc, compiled once per MPI
// library) from main.
#ifndef COLLBENCH_WORKER_ENGINE_BACKENDS_REGISTRY_H_
#define COLLBENCH_WORKER_ENGINE_BACKENDS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
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

struct BackendInfo {
  std::string name;
  MemorySpace space;
  bool built;  // false: compiled out (e.g. no CUDA); Create() says so
  std::string description;
};

using BackendFactory =
    std::function<absl::StatusOr<std::unique_ptr<Backend>>(const BackendContext&)>;

class BackendRegistry {
 public:
  void Register(BackendInfo info, BackendFactory factory);
  // InvalidArgument for an unknown name (listing the known ones),
  // Unimplemented for a backend this binary was built without.
  absl::StatusOr<std::unique_ptr<Backend>> Create(absl::string_view name,
                                                  const BackendContext& context) const;
  // Unknown name: InvalidArgument; compiled out: Unimplemented.
  absl::StatusOr<BackendInfo> Info(absl::string_view name) const;
  std::vector<BackendInfo> List() const;

 private:
  struct Entry {
    BackendInfo info;
    BackendFactory factory;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// mpi, mpi-staged, mpi-cuda, nccl. The device ones are registered with
// built=false in builds without CUDA.
void RegisterBuiltinBackends(BackendRegistry* registry);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_BACKENDS_REGISTRY_H_

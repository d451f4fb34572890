// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/backends/registry.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {

void BackendRegistry::Register(absl::string_view name, BackendFactory factory) {
  if (FindBackendSpec(name) == nullptr) std::abort();  // not in the table: a programming error
  factories_[std::string(name)] = std::move(factory);
}

absl::StatusOr<const BackendSpec*> BackendRegistry::Info(absl::string_view name) const {
  const BackendSpec* spec = FindBackendSpec(name);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown --backend '", name, "' (one of ", absl::StrJoin(BackendNames(), ", "), ")"));
  }
  if (factories_.find(name) == factories_.end()) {
    return absl::UnimplementedError(absl::StrCat(
        "--backend ", name, " is not built into this binary (",
        spec->needs_cuda ? "this build has no CUDA support; rebuild with COLLBENCH_WITH_CUDA=ON"
                         : "not registered",
        ")"));
  }
  return spec;
}

absl::StatusOr<std::unique_ptr<Backend>> BackendRegistry::Create(
    absl::string_view name, const BackendContext& context) const {
  absl::StatusOr<const BackendSpec*> info = Info(name);
  if (!info.ok()) return info.status();
  return factories_.find(name)->second(context);
}

}  // namespace collbench

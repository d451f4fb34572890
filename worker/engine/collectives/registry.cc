// SPDX-License-Identifier: Apache-2.0
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "worker/engine/collectives/collectives.h"
#include "worker/engine/collectives/copy.h"
#include "worker/engine/collectives/gemm.h"
#include "worker/engine/collectives/operation.h"

namespace collbench {

void OperationRegistry::Register(std::unique_ptr<Operation> op) {
  std::string name = op->name();
  ops_[std::move(name)] = std::move(op);
}

absl::StatusOr<const Operation*> OperationRegistry::Find(absl::string_view name) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown operation '", name, "' (one of ", absl::StrJoin(Names(), ", "), ")"));
  }
  return it->second.get();
}

std::vector<std::string> OperationRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, op] : ops_) names.push_back(name);
  return names;
}

void RegisterBuiltinOperations(OperationRegistry* registry) {
  registry->Register(NewBcastOperation());
  registry->Register(NewGatherOperation());
  registry->Register(NewAllreduceOperation());
  registry->Register(NewAllgatherOperation());
  registry->Register(NewReduceOperation());
  registry->Register(NewReduceScatterOperation());
  registry->Register(NewAlltoallOperation());
  registry->Register(NewLatencyOperation());
  registry->Register(NewBandwidthOperation());
  registry->Register(NewBidirectionalBandwidthOperation());
  RegisterCopyOperations(registry);
  registry->Register(NewGemmOperation());
}

}  // namespace collbench

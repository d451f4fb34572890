// SPDX-License-Identifier: Apache-2.0
#include "analysis/algorithms.h"

#include "absl/strings/str_cat.h"
#include "flavors/registry.h"

namespace collbench {

std::string ForcedAlgorithm(const v1::RunSpec& spec) {
  const EnvMap env(spec.env().begin(), spec.env().end());
  std::string forced = FlavorFor(spec.mpi()).ForcedAlgorithm(spec.operation(), env);
  if (!forced.empty()) return forced;
  std::string nccl;
  for (const char* key : {"NCCL_ALGO", "NCCL_PROTO"}) {
    auto it = env.find(key);
    if (it == env.end()) continue;
    absl::StrAppend(&nccl, nccl.empty() ? "" : ",", key, "=", it->second);
  }
  return nccl;
}

bool IsAlgorithmVariable(const std::string& key) {
  if (key == "NCCL_ALGO" || key == "NCCL_PROTO") return true;
  for (const MpiFlavor* flavor : Flavors().List()) {
    if (flavor->IsAlgorithmVariable(key)) return true;
  }
  return false;
}

}  // namespace collbench

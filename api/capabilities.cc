// SPDX-License-Identifier: Apache-2.0
#include "api/capabilities.h"

#include "absl/strings/str_cat.h"
#include "engine_spec/backends.h"
#include "engine_spec/scenarios.h"
#include "flavors/registry.h"

namespace collbench {
namespace {

void AddAll(const char* field, const google::protobuf::RepeatedPtrField<std::string>& values,
            std::vector<std::string>* out) {
  if (values.empty()) out->push_back(absl::StrCat(field, "=*"));
  for (const std::string& value : values) out->push_back(absl::StrCat(field, "=", value));
}

}  // namespace

std::vector<std::string> NeedsOf(const v1::RunSpec& spec) {
  std::string backend = spec.backend().empty() ? "mpi" : spec.backend();
  if (!spec.scenario().empty() || IsScenario(spec.operation())) {
    absl::StatusOr<const StrategySpec*> strategy = ResolveStrategy(spec.strategy(), spec.backend());
    if (strategy.ok()) backend = (*strategy)->worker_backend;
  }
  std::vector<std::string> needs = {
      absl::StrCat("backend=", backend),
      absl::StrCat("mpi=", FlavorFor(spec.mpi()).name()),
  };
  if (!spec.memory().empty()) needs.push_back(absl::StrCat("memory=", spec.memory()));
  return needs;
}

std::vector<std::string> OffersOf(const v1::Inventory& inventory) {
  std::vector<std::string> offers;
  AddAll("backend", inventory.backends(), &offers);
  AddAll("mpi", inventory.mpi_implementations(), &offers);
  AddAll("memory", inventory.memory_kinds(), &offers);
  return offers;
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
#include "api/capabilities.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/worker_labels.h"
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
  std::vector<std::string> names;
  for (absl::string_view term : absl::StrSplit(spec.workers(), ',', absl::SkipWhitespace())) {
    term = absl::StripAsciiWhitespace(term);
    if (absl::StrContains(term, '=')) {
      needs.push_back(absl::StrCat("workers=", term));
    } else {
      absl::ConsumePrefix(&term, "workers/");
      names.emplace_back(term);
    }
  }
  if (!names.empty()) needs.push_back(absl::StrCat("workers=", absl::StrJoin(names, "|")));
  return needs;
}

std::vector<std::string> OffersOf(const v1::Inventory& inventory, absl::string_view worker_id) {
  std::vector<std::string> offers;
  AddAll("backend", inventory.backends(), &offers);
  AddAll("mpi", inventory.mpi_implementations(), &offers);
  AddAll("memory", inventory.memory_kinds(), &offers);
  absl::ConsumePrefix(&worker_id, "workers/");
  if (!worker_id.empty()) offers.push_back(absl::StrCat("workers=", worker_id));
  for (const auto& [key, value] : inventory.labels()) {
    offers.push_back(absl::StrCat("workers=", key, "=", value));
  }
  return offers;
}

absl::Status ValidateWorkerSelector(absl::string_view selector, absl::string_view field) {
  for (absl::string_view term : absl::StrSplit(selector, ',', absl::SkipWhitespace())) {
    term = absl::StripAsciiWhitespace(term);
    if (absl::StrContains(term, '=')) {
      const size_t eq = term.find('=');
      if (absl::Status label = ValidateWorkerLabel(term.substr(0, eq), term.substr(eq + 1));
          !label.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": '", term, "': ", label.message()));
      }
      continue;
    }
    absl::string_view id = term;
    absl::ConsumePrefix(&id, "workers/");
    const bool valid = !id.empty() && id.size() <= 253 &&
                       std::all_of(id.begin(), id.end(), [](char c) {
                         return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
                       });
    if (!valid) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": '", term,
          "' is neither a worker name (workers/ID) nor a label term (KEY=VALUE)"));
    }
  }
  return absl::OkStatus();
}

bool SelectorMatches(absl::string_view selector, absl::string_view worker,
                     const v1::Inventory& inventory) {
  absl::ConsumePrefix(&worker, "workers/");
  bool named = false, any_name = false;
  for (absl::string_view term : absl::StrSplit(selector, ',', absl::SkipWhitespace())) {
    term = absl::StripAsciiWhitespace(term);
    const size_t eq = term.find('=');
    if (eq != absl::string_view::npos) {
      auto label = inventory.labels().find(std::string(term.substr(0, eq)));
      if (label == inventory.labels().end() || label->second != term.substr(eq + 1)) return false;
      continue;
    }
    absl::ConsumePrefix(&term, "workers/");
    any_name = true;
    named = named || term == worker;
  }
  return !any_name || named;
}

}  // namespace collbench

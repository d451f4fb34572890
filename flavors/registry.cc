// SPDX-License-Identifier: Apache-2.0
#include "flavors/registry.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {

void FlavorRegistry::Register(std::unique_ptr<MpiFlavor> flavor) {
  for (const auto& f : flavors_) {
    if (f->name() == flavor->name() || f->id() == flavor->id()) std::abort();  // a programming error
  }
  flavors_.push_back(std::move(flavor));
}

std::vector<const MpiFlavor*> FlavorRegistry::List() const {
  std::vector<const MpiFlavor*> out;
  for (const auto& f : flavors_) out.push_back(f.get());
  return out;
}

const MpiFlavor& FlavorRegistry::Default() const { return *flavors_.front(); }

const MpiFlavor& FlavorRegistry::ForId(int id) const {
  for (const auto& f : flavors_) {
    if (f->id() == id) return *f;
  }
  return Default();
}

const MpiFlavor* FlavorRegistry::Find(absl::string_view name) const {
  for (const auto& f : flavors_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

const MpiFlavor* FlavorRegistry::OfDaemon(absl::string_view daemon) const {
  for (const auto& f : flavors_) {
    for (const std::string& d : f->daemons()) {
      if (d == daemon) return f.get();
    }
  }
  return nullptr;
}

const MpiFlavor* FlavorRegistry::OfVersionLine(absl::string_view version) const {
  for (const auto& f : flavors_) {
    if (f->IsVersionLine(version)) return f.get();
  }
  return nullptr;
}

std::string FlavorRegistry::NamesText() const {
  std::vector<std::string> names;
  for (const auto& f : flavors_) names.emplace_back(f->name());
  return JoinWithOr(names);
}

std::string FlavorRegistry::DaemonsText() const {
  std::vector<std::string> daemons;
  for (const auto& f : flavors_) daemons.insert(daemons.end(), f->daemons().begin(), f->daemons().end());
  return JoinWithOr(daemons);
}

const FlavorRegistry& Flavors() {
  static const FlavorRegistry* const registry = [] {
    auto* r = new FlavorRegistry();
    RegisterBuiltinFlavors(r);
    return r;
  }();
  return *registry;
}

std::string JoinWithOr(const std::vector<std::string>& words) {
  if (words.size() <= 1) return absl::StrJoin(words, "");
  return absl::StrCat(absl::StrJoin(words.begin(), words.end() - 1, ", "), " or ", words.back());
}

bool MpiFlavor::IsVersionLine(absl::string_view version) const {
  return absl::StrContains(version, facts_.display_name);
}

const std::vector<std::string>& AlgorithmsIn(const AlgorithmLists& lists,
                                             absl::string_view operation) {
  static const std::vector<std::string>* const kNone = new std::vector<std::string>();
  auto it = lists.find(operation);
  return it == lists.end() ? *kNone : it->second;
}

std::string LibraryOperation(absl::string_view operation) {
  return operation == "reduce_scatter" ? "reduce_scatter_block" : std::string(operation);
}

}  // namespace collbench

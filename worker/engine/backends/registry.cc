#include "worker/engine/backends/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {

void BackendRegistry::Register(BackendInfo info, BackendFactory factory) {
  std::string name = info.name;
  entries_[std::move(name)] = Entry{std::move(info), std::move(factory)};
}

absl::StatusOr<BackendInfo> BackendRegistry::Info(absl::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::vector<std::string> names;
    for (const auto& [known, entry] : entries_) names.push_back(known);
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown --backend '", name, "' (one of ", absl::StrJoin(names, ", "), ")"));
  }
  if (!it->second.info.built) {
    return absl::UnimplementedError(absl::StrCat(
        "--backend ", name, " is not built into this binary (", it->second.info.description,
        ")"));
  }
  return it->second.info;
}

absl::StatusOr<std::unique_ptr<Backend>> BackendRegistry::Create(
    absl::string_view name, const BackendContext& context) const {
  absl::StatusOr<BackendInfo> info = Info(name);
  if (!info.ok()) return info.status();
  return entries_.find(name)->second.factory(context);
}

std::vector<BackendInfo> BackendRegistry::List() const {
  std::vector<BackendInfo> out;
  for (const auto& [name, entry] : entries_) out.push_back(entry.info);
  return out;
}

}  // namespace collbench

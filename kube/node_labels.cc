// SPDX-License-Identifier: Apache-2.0
#include "kube/node_labels.h"

#include "absl/strings/str_cat.h"

namespace collbench::kube {

absl::StatusOr<std::map<std::string, std::string>> NodeLabels(
    KubeClient& client, const std::string& node, const std::vector<std::string>& keys) {
  absl::StatusOr<Json> object = client.Get(absl::StrCat("/api/v1/nodes/", EscapeQueryValue(node)));
  if (!object.ok()) return object.status();
  const Json& labels = object->value("metadata", Json::object()).value("labels", Json::object());
  std::map<std::string, std::string> out;
  for (const std::string& key : keys) {
    auto it = labels.find(key);
    if (it != labels.end() && it->is_string()) out[key] = it->get<std::string>();
  }
  return out;
}

}  // namespace collbench::kube

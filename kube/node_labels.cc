// SPDX-License-Identifier: Apache-2.0
#include "kube/node_labels.h"

#include "absl/strings/str_cat.h"
#include "kube/json_fields.h"

namespace collbench::kube {

absl::StatusOr<std::map<std::string, std::string>> NodeLabels(
    KubeClient& client, const std::string& node, const std::vector<std::string>& keys) {
  absl::StatusOr<Json> object = client.Get(absl::StrCat("/api/v1/nodes/", EscapeQueryValue(node)));
  if (!object.ok()) return object.status();
  const Json& labels = Field(Field(*object, "metadata"), "labels");
  std::map<std::string, std::string> out;
  for (const std::string& key : keys) {
    if (const std::string value = Text(labels, key.c_str()); !value.empty()) out[key] = value;
  }
  return out;
}

}  // namespace collbench::kube

// SPDX-License-Identifier: Apache-2.0
// Reading the API server's JSON without trusting its shape. nlohmann's
// value() throws when a field is there with another type ("name": 5) or
// the object is not one, and an exception would end the controller: these
// read a missing or mistyped field as empty instead.
#ifndef COLLBENCH_KUBE_JSON_FIELDS_H_
#define COLLBENCH_KUBE_JSON_FIELDS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace collbench::kube {

// `object[key]`, or null when `object` is not an object or has no `key`.
inline const nlohmann::json& Field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// `object[key]` as a string, or "" when it is none.
inline std::string Text(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = Field(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

// `object[key]` when it is an array, else an empty one.
inline const nlohmann::json& ArrayOf(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& value = Field(object, key);
  return value.is_array() ? value : kEmpty;
}

// A Kubernetes object's metadata.name / metadata.resourceVersion.
inline std::string NameOf(const nlohmann::json& object) {
  return Text(Field(object, "metadata"), "name");
}
inline std::string ResourceVersionOf(const nlohmann::json& object) {
  return Text(Field(object, "metadata"), "resourceVersion");
}

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_JSON_FIELDS_H_

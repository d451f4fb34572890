// SPDX-License-Identifier: Apache-2.0
// Just enough YAML to read docs/openapi.yaml in a test: block mappings,
// block sequences (items that are scalars or mappings), plain and quoted
// scalars, comments, and `|` / `>` block scalars (kept as raw text). Flow
// collections ("[a, b]", "{}") are kept as their raw text.
#ifndef COLLBENCH_TESTS_UNIT_REST_MINI_YAML_H_
#define COLLBENCH_TESTS_UNIT_REST_MINI_YAML_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace collbench::testing_yaml {

struct YamlNode {
  // Declared here, defined in the .cc where YamlNode is complete: clang
  // (before 16) with libstdc++ 12 otherwise instantiates the members of
  // `map` while YamlNode is still incomplete.
  YamlNode();
  YamlNode(const YamlNode&);
  YamlNode(YamlNode&&) noexcept;
  YamlNode& operator=(const YamlNode&);
  YamlNode& operator=(YamlNode&&) noexcept;
  ~YamlNode();

  enum class Kind { kScalar, kMap, kList };
  Kind kind = Kind::kScalar;
  std::string scalar;
  std::vector<std::pair<std::string, YamlNode>> map;  // in file order
  std::vector<YamlNode> list;

  // The value of `key` in a mapping, or null.
  const YamlNode* Get(absl::string_view key) const;
};

// InvalidArgument naming the line for what this subset cannot read.
absl::StatusOr<YamlNode> ParseYaml(absl::string_view text);

}  // namespace collbench::testing_yaml

#endif  // COLLBENCH_TESTS_UNIT_REST_MINI_YAML_H_

// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/memory_kinds.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {
namespace {

// "numa:N" -> "numa"; "default" -> "default".
absl::string_view PrefixOf(absl::string_view text) { return text.substr(0, text.find(':')); }

// "numa:3" -> 3; anything else is InvalidArgument naming the text.
absl::StatusOr<int> ParseNode(absl::string_view text) {
  const size_t colon = text.find(':');
  const absl::string_view digits =
      colon == absl::string_view::npos ? absl::string_view() : text.substr(colon + 1);
  const char* const digits_end = digits.data() + digits.size();
  int node = -1;
  const auto [end, error] = std::from_chars(digits.data(), digits_end, node);
  if (digits.empty() || error != std::errc() || end != digits_end || node < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory '", text, "': expected numa:N with N a NUMA node number"));
  }
  return node;
}

}  // namespace

const std::vector<MemoryKindSpec>& MemoryKindSpecs() {
  static const auto* specs = new std::vector<MemoryKindSpec>{
      {"default", MemorySpace::kHost},    {"regular", MemorySpace::kHost},
      {"interleave", MemorySpace::kHost}, {"hbw", MemorySpace::kHost},
      {"hbw_preferred", MemorySpace::kHost}, {"dax_kmem", MemorySpace::kHost},
      {"numa:N", MemorySpace::kHost},     {"pinned", MemorySpace::kHost},
      {"device", MemorySpace::kDevice},
  };
  return *specs;
}

std::vector<std::string> MemoryKindNames() {
  std::vector<std::string> names;
  for (const MemoryKindSpec& spec : MemoryKindSpecs()) names.emplace_back(spec.name);
  return names;
}

absl::StatusOr<ParsedMemoryKind> ParseMemoryKind(absl::string_view text) {
  const absl::string_view prefix = PrefixOf(text);
  for (const MemoryKindSpec& spec : MemoryKindSpecs()) {
    const absl::string_view name = spec.name;
    if (PrefixOf(name) != prefix) continue;
    ParsedMemoryKind parsed{&spec, std::nullopt};
    if (name.size() != prefix.size()) {  // takes an argument: numa:N
      absl::StatusOr<int> node = ParseNode(text);
      if (!node.ok()) return node.status();
      parsed.numa_node = *node;
    } else if (text.size() != prefix.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--memory '", text, "': '", prefix, "' takes no argument"));
    }
    return parsed;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown --memory '", text, "' (one of ",
                                                 absl::StrJoin(MemoryKindNames(), ", "), ")"));
}

}  // namespace collbench

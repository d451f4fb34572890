// SPDX-License-Identifier: Apache-2.0
// The `--memory` kinds (docs/design/data-plane.md#memory-kinds) as vocabulary: their names, the
// space their buffers live in, and the parsing of a `--memory` text. The
// engine's MemoryKindRegistry (worker/engine/memory/) attaches the
// allocators; api/ checks a RunSpec's memory against the same table without
// touching memkind, libnuma or CUDA.
#ifndef COLLBENCH_ENGINE_SPEC_MEMORY_KINDS_H_
#define COLLBENCH_ENGINE_SPEC_MEMORY_KINDS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine_spec/types.h"

namespace collbench {

struct MemoryKindSpec {
  const char* name;  // as shown: "numa:N" for a kind that takes an argument
  MemorySpace space;
};

// default, regular, interleave, hbw, hbw_preferred, dax_kmem, numa:N,
// pinned, device, in that order.
const std::vector<MemoryKindSpec>& MemoryKindSpecs();
std::vector<std::string> MemoryKindNames();

struct ParsedMemoryKind {
  const MemoryKindSpec* kind = nullptr;
  std::optional<int> numa_node;  // numa:N
};

// Parses a `--memory` text. InvalidArgument naming the text: an unknown
// kind (listing the known ones), an argument to a kind that takes none,
// or numa:N without a node number.
absl::StatusOr<ParsedMemoryKind> ParseMemoryKind(absl::string_view text);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_MEMORY_KINDS_H_

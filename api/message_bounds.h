// SPDX-License-Identifier: Apache-2.0
// Bounds on what a caller may put in a message that the coordinator keeps
// and serves again (docs/operations/limits.md#workers-joining): every
// string's length, every repeated field's and map's entries, and the
// whole message's size, checked field by field through protobuf
// reflection, so a field added later is bounded without a new check.
//
// Thread safety: a pure function.
#ifndef COLLBENCH_API_MESSAGE_BOUNDS_H_
#define COLLBENCH_API_MESSAGE_BOUNDS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace collbench {

struct MessageBounds {
  size_t max_string_bytes = 1024;     // each string and bytes field
  size_t max_entries = 256;           // each repeated field
  size_t max_map_entries = 64;        // each map
  size_t max_total_bytes = 64 << 10;  // the message serialized
};

// The bounds of a worker's inventory: at most 64 labels (keys and values
// are checked further by ValidateWorkerLabel), 1 KiB a string, 256 entries
// a list (GPUs, NUMA nodes, links), 64 KiB in all.
MessageBounds InventoryBounds();

// OK, or InvalidArgument naming the field under `path` (e.g.
// "register.inventory.labels: 12000 entries, at most 64") and the bound.
absl::Status CheckMessageBounds(const google::protobuf::Message& message,
                                const MessageBounds& bounds, absl::string_view path);

}  // namespace collbench

#endif  // COLLBENCH_API_MESSAGE_BOUNDS_H_

// SPDX-License-Identifier: Apache-2.0
// Splits a process' output stream into lines with a bounded buffer
// (docs/design/security.md#bounds): a line longer than max_line_bytes is cut there, the
// cut part is delivered as its own (truncated) line and the rest of that
// line is dropped up to its newline. Cuts are counted so the owner can say
// so once.
// Thread safety: none; one owner.
#ifndef COLLBENCH_WORKER_AGENT_LINE_BUFFER_H_
#define COLLBENCH_WORKER_AGENT_LINE_BUFFER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace collbench {

class LineBuffer {
 public:
  static constexpr size_t kDefaultMaxLineBytes = size_t{1} << 20;  // 1 MiB

  explicit LineBuffer(size_t max_line_bytes = kDefaultMaxLineBytes)
      : max_line_bytes_(max_line_bytes) {}

  // Appends `data`; returns the lines it completed (without '\n').
  std::vector<std::string> Add(absl::string_view data);
  // Lines cut so far.
  int cut_lines() const { return cut_lines_; }
  // Bytes held for the current partial line (at most max_line_bytes).
  size_t buffered_bytes() const { return partial_.size(); }

 private:
  const size_t max_line_bytes_;
  std::string partial_;
  bool discarding_ = false;  // inside a line already cut
  int cut_lines_ = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_LINE_BUFFER_H_

// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/line_buffer.h"

namespace collbench {

std::vector<std::string> LineBuffer::Add(absl::string_view data) {
  std::vector<std::string> lines;
  while (!data.empty()) {
    const size_t nl = data.find('\n');
    const absl::string_view piece = data.substr(0, nl);
    if (discarding_) {
      if (nl == absl::string_view::npos) return lines;
      discarding_ = false;
    } else if (partial_.size() + piece.size() > max_line_bytes_) {
      partial_.append(piece.data(), max_line_bytes_ - partial_.size());
      lines.push_back(std::move(partial_));
      partial_.clear();
      ++cut_lines_;
      discarding_ = nl == absl::string_view::npos;
    } else {
      partial_.append(piece.data(), piece.size());
      if (nl == absl::string_view::npos) return lines;
      lines.push_back(std::move(partial_));
      partial_.clear();
    }
    if (nl == absl::string_view::npos) return lines;
    data.remove_prefix(nl + 1);
  }
  return lines;
}

}  // namespace collbench

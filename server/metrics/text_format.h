// SPDX-License-Identifier: Apache-2.0
// Pieces of Prometheus' text exposition format for the series the
// coordinator writes as text (schedule_metrics.h, node_metrics.h) rather
// than through prometheus-cpp.
#ifndef COLLBENCH_SERVER_METRICS_TEXT_FORMAT_H_
#define COLLBENCH_SERVER_METRICS_TEXT_FORMAT_H_

#include <string>

#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"

namespace collbench {

// A label value escaped as the text format wants it: backslash, double
// quote and line feed.
inline std::string EscapedLabelValue(absl::string_view value) {
  return absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
}

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_TEXT_FORMAT_H_

// SPDX-License-Identifier: Apache-2.0
#include "server/metrics/node_metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/metrics/text_format.h"

namespace collbench {

std::string NodeHealthMetricsText(const std::vector<v1::Worker>& workers) {
  std::string out =
      "# HELP collbench_node_health A worker's node as the hunts judged it: 1 healthy, 0 "
      "degraded (confirmed bad by a hunt and quarantined).\n"
      "# TYPE collbench_node_health gauge\n";
  for (const v1::Worker& worker : workers) {
    const absl::string_view id = absl::StripPrefix(worker.name(), "workers/");
    const std::string& host = worker.inventory().host_id();
    absl::StrAppend(&out, "collbench_node_health{node=\"",
                    EscapedLabelValue(host.empty() ? id : absl::string_view(host)), "\",worker=\"",
                    EscapedLabelValue(id), "\"} ", worker.has_suspect() ? 0 : 1, "\n");
  }
  return out;
}

}  // namespace collbench

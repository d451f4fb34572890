// SPDX-License-Identifier: Apache-2.0
// Each node's health as the hunts judged it, in Prometheus' text format,
// appended to the coordinator's /metrics (docs/reference/metrics.md):
//
//   collbench_node_health{node, worker}   gauge: 1 healthy, 0 degraded (a
//                                         hunt confirmed the worker bad and
//                                         it is quarantined)
//
// `node` is the worker's host id (on Kubernetes the node's name: the
// DaemonSet sets it from spec.nodeName), else its bare name; `worker` the
// bare name. One series per known worker, LOST ones included until their
// name is forgotten, so the series are bounded by --max-workers and a
// forgotten worker's series goes with it.
#ifndef COLLBENCH_SERVER_METRICS_NODE_METRICS_H_
#define COLLBENCH_SERVER_METRICS_NODE_METRICS_H_

#include <string>
#include <vector>

#include "collbench/v1/worker.pb.h"

namespace collbench {

std::string NodeHealthMetricsText(const std::vector<v1::Worker>& workers);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_NODE_METRICS_H_

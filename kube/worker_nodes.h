// SPDX-License-Identifier: Apache-2.0
// Which node a worker may speak for (docs/operations/kubernetes.md
// #the-controller). A worker reports its node's name itself
// (Inventory.node_name), and a verdict about it lands on that node: taken
// on its word, a compromised worker that makes itself slow could get any
// node of the cluster tainted. So collbench-kube believes a worker only
// where Kubernetes vouches for it: a running pod of the worker DaemonSet
// (the pods the selector lists) on that node whose pod IP is the host of
// the worker's Agent address, which the worker's runs use (with hostNetwork
// the pod IP is the node's). Pod IPs and nodes are the cluster's record,
// not the worker's.
#ifndef COLLBENCH_KUBE_WORKER_NODES_H_
#define COLLBENCH_KUBE_WORKER_NODES_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collbench/v1/worker.pb.h"

namespace collbench::kube {

// Clears the node_name of every worker of `workers` that no pod of
// `pods` (a PodList as the API returns it) vouches for, and returns one
// line per worker cleared, saying why.
std::vector<std::string> VerifyWorkerNodes(std::vector<v1::Worker>* workers,
                                           const nlohmann::json& pods);

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_WORKER_NODES_H_

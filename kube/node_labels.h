// SPDX-License-Identifier: Apache-2.0
// A worker's topology from its node's labels (docs/operations/hunts.md
// #patterns): Kubernetes gives a pod no downward-API view of its node's
// labels, so a worker that is asked to (collbench-worker --node-labels)
// reads its own Node once at start with the pod's service account and
// reports the labels named (the rack and zone keys topology hunts read) as
// its own.
#ifndef COLLBENCH_KUBE_NODE_LABELS_H_
#define COLLBENCH_KUBE_NODE_LABELS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/kube_client.h"

namespace collbench::kube {

// The labels of node `node` whose keys are among `keys` (those it does not
// carry are left out). NotFound naming the node when it does not exist;
// the client's errors otherwise.
absl::StatusOr<std::map<std::string, std::string>> NodeLabels(KubeClient& client,
                                                              const std::string& node,
                                                              const std::vector<std::string>& keys);

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_NODE_LABELS_H_

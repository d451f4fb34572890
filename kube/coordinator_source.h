// SPDX-License-Identifier: Apache-2.0
// The controller's view of the coordinator over its gRPC API, with a token
// of role read (it changes nothing there): every worker, the newest
// finished hunts, and the runs now scheduled or running.
#ifndef COLLBENCH_KUBE_COORDINATOR_SOURCE_H_
#define COLLBENCH_KUBE_COORDINATOR_SOURCE_H_

#include <memory>

#include "client/coordinator_client.h"
#include "kube/controller.h"

namespace collbench::kube {

// `hunts`: how many of the newest finished hunts a pass reads (their
// events, and which nodes they measured healthy).
std::unique_ptr<CoordinatorSource> NewGrpcCoordinatorSource(CoordinatorClient* client, int hunts);

}  // namespace collbench::kube

#endif  // COLLBENCH_KUBE_COORDINATOR_SOURCE_H_

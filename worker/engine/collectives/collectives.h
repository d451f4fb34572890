// SPDX-License-Identifier: Apache-2.0
// Factories for the built-in collective and point-to-point operations; one
// file each. Sizes follow docs/design/data-plane.md#sizes: `count` is elements per rank (per peer
// for alltoall), and AlgBytes/BusFactor are nccl-tests' definitions.
#ifndef COLLBENCH_WORKER_ENGINE_COLLECTIVES_COLLECTIVES_H_
#define COLLBENCH_WORKER_ENGINE_COLLECTIVES_COLLECTIVES_H_

#include <memory>

#include "worker/engine/collectives/operation.h"

namespace collbench {

std::unique_ptr<Operation> NewBcastOperation();
std::unique_ptr<Operation> NewGatherOperation();
std::unique_ptr<Operation> NewAllreduceOperation();
std::unique_ptr<Operation> NewAllgatherOperation();
std::unique_ptr<Operation> NewReduceOperation();
std::unique_ptr<Operation> NewReduceScatterOperation();
std::unique_ptr<Operation> NewAlltoallOperation();
// Point to point between pairs (r, r + n/2), as OSU's multi-pair tests.
std::unique_ptr<Operation> NewLatencyOperation();
std::unique_ptr<Operation> NewBandwidthOperation();
std::unique_ptr<Operation> NewBidirectionalBandwidthOperation();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_COLLECTIVES_COLLECTIVES_H_

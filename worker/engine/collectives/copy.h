// SPDX-License-Identifier: Apache-2.0
// Copy bandwidth (docs/design/data-plane.md#operations): h2d, d2h and d2d on GPU builds,
// and h2h (memcpy between two host buffers) everywhere. Each rank copies `count` elements between its own two buffers
// with DeviceRuntime::CopyAsync; no backend and no other rank is involved,
// so every rank measures its own PCIe / NVLink / HBM path at the same time.
//
//   h2d  send in host memory (the --memory kind), recv on the device
//   d2h  send on the device, recv in host memory
//   d2d  both on the device
//   h2h  both in host memory (the --memory kind), copied with memcpy: the
//        host memory-bandwidth probe (seed 003, docs/suites.md)
//
// AlgBytes = count * element size and BusFactor = 1. The receive buffer
// must reproduce the send buffer exactly.
#ifndef COLLBENCH_WORKER_ENGINE_COLLECTIVES_COPY_H_
#define COLLBENCH_WORKER_ENGINE_COLLECTIVES_COPY_H_

#include "worker/engine/collectives/operation.h"

namespace collbench {

// Registers h2d, d2h, d2d and h2h. They are registered in every build;
// without a CUDA device the first three fail in Run() (FailedPrecondition with no runtime, or
// the runtime's own Unimplemented / FailedPrecondition).
void RegisterCopyOperations(OperationRegistry* registry);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_COLLECTIVES_COPY_H_

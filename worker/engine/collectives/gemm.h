// SPDX-License-Identifier: Apache-2.0
// gemm: the compute probe of the host-vs-container comparison (seed 003,
// docs/suites.md; DeepBench's gemm_bench on a CPU). Each rank multiplies two
// n x n matrices of its own, C = A * B, with a cache-blocked loop on one
// core; no backend and no other rank is involved. A size names one
// matrix: n is the largest side with n*n elements in it. AlgBytes is the
// bytes of A, B and C (BusFactor 1); the work is 2n^3 floating-point
// operations, so GFLOP/s = 2n^3 / avg. float32 and float64 only; the
// inputs are small integers, so --check demands the exact product.
#ifndef COLLBENCH_WORKER_ENGINE_COLLECTIVES_GEMM_H_
#define COLLBENCH_WORKER_ENGINE_COLLECTIVES_GEMM_H_

#include <memory>

#include "worker/engine/collectives/operation.h"

namespace collbench {

std::unique_ptr<Operation> NewGemmOperation();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_COLLECTIVES_GEMM_H_

// SPDX-License-Identifier: Apache-2.0
// The collective algorithms the MPI libraries let a user choose, as
// collbench's operations name them. The lists and the variables that force
// them belong to each library's flavour (flavors/mpi_flavor.h,
// MpiFlavor::Algorithms and friends; the library-specific helpers below
// come from flavors/open_mpi.h and flavors/mpich.h); `collbench sweep` runs
// them and the advisor writes them.
#ifndef COLLBENCH_ANALYSIS_ALGORITHMS_H_
#define COLLBENCH_ANALYSIS_ALGORITHMS_H_

#include <string>
#include <vector>

#include "collbench/v1/run.pb.h"
#include "flavors/mpich.h"
#include "flavors/open_mpi.h"

namespace collbench {

// The algorithm a run's environment forces for its operation, as the
// library names it ("ring", "recursive_doubling", "NCCL_ALGO=Tree"), or ""
// when the library chooses (MpiFlavor::ForcedAlgorithm of the run's
// flavour, else NCCL's NCCL_ALGO / NCCL_PROTO).
std::string ForcedAlgorithm(const v1::RunSpec& spec);

// True for the environment keys ForcedAlgorithm reads (and the switches
// that enable them): they name an algorithm, not a setting.
bool IsAlgorithmVariable(const std::string& key);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_ALGORITHMS_H_

// SPDX-License-Identifier: Apache-2.0
// MPICH 4.0 (ch4 over UCX, hydra) as an MpiFlavor (mpi_flavor.h): mpiexec
// with the shim link as -launcher-exec, hydra_pmi_proxy on peers, algorithm
// CVARs by name.
#ifndef COLLBENCH_FLAVORS_MPICH_H_
#define COLLBENCH_FLAVORS_MPICH_H_

#include <memory>
#include <string>
#include <vector>

#include "flavors/mpi_flavor.h"

namespace collbench {

std::unique_ptr<MpiFlavor> NewMpichFlavor();

// MPICH's algorithms for `operation` (without "auto"); empty when none.
const std::vector<std::string>& MpichAlgorithms(absl::string_view operation);
// "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" for allreduce.
std::string MpichAlgorithmVariable(absl::string_view operation);

}  // namespace collbench

#endif  // COLLBENCH_FLAVORS_MPICH_H_

// SPDX-License-Identifier: Apache-2.0
// Open MPI 4.1 as an MpiFlavor (mpi_flavor.h): mpirun with the worker's
// launch shim as plm_rsh_agent, orted (prted for PRRTE-based releases) on
// peers, coll_tuned's numbered algorithms and dynamic rules files.
#ifndef COLLBENCH_FLAVORS_OPEN_MPI_H_
#define COLLBENCH_FLAVORS_OPEN_MPI_H_

#include <memory>
#include <string>
#include <vector>

#include "flavors/mpi_flavor.h"

namespace collbench {

std::unique_ptr<MpiFlavor> NewOpenMpiFlavor();

// Helpers of Open MPI's own formats (the advisor's dynamic rules file).
// Open MPI's algorithms for `operation`: element i is algorithm number i+1
// (0 is "ignore": the library's fixed decision). Empty when coll_tuned has
// no choice for it.
const std::vector<std::string>& OpenMpiAlgorithms(absl::string_view operation);
// The number Open MPI gives `algorithm` for `operation` (from 1), 0 when
// it has no algorithm of that name (0 is also its "ignore": its own choice).
int OpenMpiAlgorithmNumber(absl::string_view operation, absl::string_view algorithm);
// Open MPI's collective id in a dynamic rules file (its COLLTYPE), -1 when
// the operation has none.
int OpenMpiCollectiveId(absl::string_view operation);

}  // namespace collbench

#endif  // COLLBENCH_FLAVORS_OPEN_MPI_H_

// SPDX-License-Identifier: Apache-2.0
// The MPI libraries collbench launches, registered explicitly (CONTRIBUTING.md#style).
// Open MPI first: it is the default when a run does not name one.
#include "flavors/mpich.h"
#include "flavors/open_mpi.h"
#include "flavors/registry.h"

namespace collbench {

void RegisterBuiltinFlavors(FlavorRegistry* registry) {
  registry->Register(NewOpenMpiFlavor());
  registry->Register(NewMpichFlavor());
}

}  // namespace collbench

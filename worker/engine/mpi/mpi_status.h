// MPI return codes as absl::Status, naming the call, MPI's error text and
// file:line (STYLE §4). Compiled once per MPI library.
#ifndef COLLBENCH_WORKER_ENGINE_MPI_MPI_STATUS_H_
#define COLLBENCH_WORKER_ENGINE_MPI_MPI_STATUS_H_

#include <mpi.h>

#include "absl/status/status.h"
#include "worker/engine/types.h"

namespace collbench {

absl::Status MpiStatus(int code, const char* call, const char* file, int line);

// MPI_Datatype / MPI_Op for the engine's types. InvalidArgument for float16
// and bfloat16, which MPI does not define.
absl::Status ToMpiDatatype(DataType dtype, MPI_Datatype* out);
MPI_Op ToMpiOp(ReduceOp op);

}  // namespace collbench

// Evaluates an MPI call and returns its failure as a Status.
#define MPI_RETURN_IF_ERROR(call)                                       \
  do {                                                                  \
    const int collbench_mpi_rc_ = (call);                               \
    if (collbench_mpi_rc_ != MPI_SUCCESS) {                             \
      return ::collbench::MpiStatus(collbench_mpi_rc_, #call, __FILE__, \
                                    __LINE__);                          \
    }                                                                   \
  } while (false)

#endif  // COLLBENCH_WORKER_ENGINE_MPI_MPI_STATUS_H_

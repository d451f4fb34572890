// SPDX-License-Identifier: Apache-2.0
// MPI return codes as absl::Status, naming the call, MPI's error text and
// file:line (CONTRIBUTING.md#style). Compiled once per MPI library.
#ifndef COLLBENCH_WORKER_ENGINE_MPI_MPI_STATUS_H_
#define COLLBENCH_WORKER_ENGINE_MPI_MPI_STATUS_H_

#include <mpi.h>

#include "absl/status/status.h"
#include "engine_spec/types.h"

namespace collbench {

absl::Status MpiStatus(int code, const char* call, const char* file, int line);

// MPI_Datatype for the engine's types; false for float16 and bfloat16,
// which MPI does not define. Inline: backends call it inside timed loops.
inline bool MpiDatatypeFor(DataType dtype, MPI_Datatype* out) {
  switch (dtype) {
    case DataType::kInt8: *out = MPI_INT8_T; return true;
    case DataType::kInt32: *out = MPI_INT32_T; return true;
    case DataType::kInt64: *out = MPI_INT64_T; return true;
    case DataType::kFloat32: *out = MPI_FLOAT; return true;
    case DataType::kFloat64: *out = MPI_DOUBLE; return true;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      break;
  }
  return false;
}

// The same as a Status: InvalidArgument naming the type and what to use.
absl::Status ToMpiDatatype(DataType dtype, MPI_Datatype* out);

inline MPI_Op ToMpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
  }
  return MPI_SUM;
}

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

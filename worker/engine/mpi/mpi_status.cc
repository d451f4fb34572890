#include "worker/engine/mpi/mpi_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace collbench {

absl::Status MpiStatus(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  if (length == 0) return absl::InternalError(absl::StrCat(
      call, " failed with MPI error ", code, " (", file, ":", line, ")"));
  return absl::InternalError(absl::StrCat(call, " failed: ",
                                          std::string(text, length), " (", file, ":",
                                          line, ")"));
}

absl::Status ToMpiDatatype(DataType dtype, MPI_Datatype* out) {
  switch (dtype) {
    case DataType::kInt8: *out = MPI_INT8_T; return absl::OkStatus();
    case DataType::kInt32: *out = MPI_INT32_T; return absl::OkStatus();
    case DataType::kInt64: *out = MPI_INT64_T; return absl::OkStatus();
    case DataType::kFloat32: *out = MPI_FLOAT; return absl::OkStatus();
    case DataType::kFloat64: *out = MPI_DOUBLE; return absl::OkStatus();
    case DataType::kFloat16:
    case DataType::kBFloat16:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--dtype ", DataTypeName(dtype),
      " needs --backend nccl (MPI has no 16-bit float type)"));
}

MPI_Op ToMpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
  }
  return MPI_SUM;
}

}  // namespace collbench

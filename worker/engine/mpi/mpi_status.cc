// SPDX-License-Identifier: Apache-2.0
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
  if (MpiDatatypeFor(dtype, out)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--dtype ", DataTypeName(dtype),
      " needs --backend nccl (MPI has no 16-bit float type)"));
}

}  // namespace collbench

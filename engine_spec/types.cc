// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/types.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {

size_t ElementSize(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kFloat64: return 8;
  }
  return 1;
}

absl::string_view DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return "int8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
  }
  return "?";
}

const std::vector<DataType>& AllDataTypes() {
  static const auto* all = new std::vector<DataType>{
      DataType::kInt8,     DataType::kInt32,   DataType::kInt64,
      DataType::kFloat16,  DataType::kBFloat16, DataType::kFloat32,
      DataType::kFloat64};
  return *all;
}

bool IsNcclOnly(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  for (DataType t : AllDataTypes()) {
    if (DataTypeName(t) == name) return t;
  }
  if (name == "half") return DataType::kFloat16;
  if (name == "float" ) return DataType::kFloat32;
  if (name == "double") return DataType::kFloat64;
  std::vector<absl::string_view> names;
  for (DataType t : AllDataTypes()) names.push_back(DataTypeName(t));
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown --dtype '", name, "' (one of ", absl::StrJoin(names, ", "), ")"));
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
  }
  return "?";
}

const std::vector<ReduceOp>& AllReduceOps() {
  static const auto* all = new std::vector<ReduceOp>{
      ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};
  return *all;
}

absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name) {
  for (ReduceOp op : AllReduceOps()) {
    if (ReduceOpName(op) == name) return op;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown --redop '", name, "' (one of sum, prod, min, max)"));
}

absl::string_view MemorySpaceName(MemorySpace space) {
  return space == MemorySpace::kHost ? "host" : "device";
}

absl::string_view IterationSyncName(IterationSync sync) {
  return sync == IterationSync::kBarrier ? "barrier" : "none";
}

absl::StatusOr<IterationSync> ParseIterationSync(absl::string_view name) {
  if (name == "barrier") return IterationSync::kBarrier;
  if (name == "none") return IterationSync::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --sync '", name, "' (one of barrier, none)"));
}

}  // namespace collbench

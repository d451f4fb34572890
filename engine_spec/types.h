// SPDX-License-Identifier: Apache-2.0
// Element types, reduction operators and memory spaces the engine speaks of,
// with their command-line names.
#ifndef COLLBENCH_ENGINE_SPEC_TYPES_H_
#define COLLBENCH_ENGINE_SPEC_TYPES_H_

#include <cstddef>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace collbench {

enum class DataType { kInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };
enum class ReduceOp { kSum, kProd, kMin, kMax };
// Where a buffer lives: host memory any MPI can use, or GPU memory.
enum class MemorySpace { kHost, kDevice };
// What separates two timed iterations of a collective
// (docs/design/data-plane.md#iteration-synchronization): an untimed barrier, so
// every sample is one isolated operation as in the OSU benchmarks, or nothing,
// back to back as in nccl-tests' loop.
enum class IterationSync { kBarrier, kNone };

size_t ElementSize(DataType dtype);
absl::string_view DataTypeName(DataType dtype);
absl::StatusOr<DataType> ParseDataType(absl::string_view name);
const std::vector<DataType>& AllDataTypes();
// float16 and bfloat16 exist only on nccl (MPI has no such types).
bool IsNcclOnly(DataType dtype);

absl::string_view ReduceOpName(ReduceOp op);
absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name);
const std::vector<ReduceOp>& AllReduceOps();

absl::string_view MemorySpaceName(MemorySpace space);

absl::string_view IterationSyncName(IterationSync sync);  // "barrier" / "none"
absl::StatusOr<IterationSync> ParseIterationSync(absl::string_view name);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_TYPES_H_

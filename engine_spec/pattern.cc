// SPDX-License-Identifier: Apache-2.0
#include "engine_spec/pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine_spec/half.h"

namespace collbench {
namespace {

constexpr int kMaxPowerOfTwoFactors = 6;  // 2^6 = 64 fits int8

// Distinct values per element for sums: 1..SumRange.
int SumRange(DataType dtype, int nranks) {
  const double limit = ExactIntegerLimit(dtype);
  const double m = std::floor(limit / std::max(nranks, 1));
  return static_cast<int>(std::clamp(m, 1.0, 3.0));
}

int MinMaxRange(DataType dtype) {
  return static_cast<int>(std::min(ExactIntegerLimit(dtype), 100.0));
}

}  // namespace

double ExactIntegerLimit(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return 127;
    case DataType::kBFloat16: return 256;
    case DataType::kFloat16: return 2048;
    case DataType::kFloat32: return 16777216;
    default: return 2147483647.0;
  }
}

double MovedValue(DataType dtype, int rank, size_t i) {
  // Unique per (rank, element) as long as the range allows; offsets by 1 so
  // it is never the poison value or zero.
  const uint64_t range = static_cast<uint64_t>(ExactIntegerLimit(dtype));
  const uint64_t key = static_cast<uint64_t>(rank) * 7919u + i * 13u;
  return static_cast<double>(key % range) + 1.0;
}

double ReductionInput(DataType dtype, ReduceOp op, int nranks, int rank, size_t i) {
  switch (op) {
    case ReduceOp::kSum:
      return 1.0 + static_cast<double>((rank + i) % SumRange(dtype, nranks));
    case ReduceOp::kProd: {
      // Exactly min(nranks, i % 7) ranks contribute a 2 at element i:
      // (rank + i) mod nranks runs over 0..nranks-1 as rank does.
      const size_t twos = i % (kMaxPowerOfTwoFactors + 1);
      return ((rank + i) % nranks) < twos ? 2.0 : 1.0;
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return 1.0 + static_cast<double>((rank * 37u + i * 11u) % MinMaxRange(dtype));
  }
  return 1.0;
}

double ReducedValue(DataType dtype, ReduceOp op, int nranks, size_t i) {
  if (op == ReduceOp::kProd) {
    const size_t twos = std::min<size_t>(nranks, i % (kMaxPowerOfTwoFactors + 1));
    return std::ldexp(1.0, static_cast<int>(twos));
  }
  double acc = ReductionInput(dtype, op, nranks, 0, i);
  for (int r = 1; r < nranks; ++r) {
    const double v = ReductionInput(dtype, op, nranks, r, i);
    switch (op) {
      case ReduceOp::kSum: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProd: break;
    }
  }
  return acc;
}

absl::Status CheckReductionExact(DataType dtype, ReduceOp op, int nranks) {
  if (op == ReduceOp::kSum && nranks > ExactIntegerLimit(dtype)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--check cannot validate a ", DataTypeName(dtype), " sum over ", nranks,
        " ranks exactly (more than ", ExactIntegerLimit(dtype),
        "); use a wider --dtype"));
  }
  return absl::OkStatus();
}

double LoadElement(const void* buffer, DataType dtype, size_t i) {
  switch (dtype) {
    case DataType::kInt8: return static_cast<const int8_t*>(buffer)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(buffer)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(buffer)[i]);
    case DataType::kFloat16: return HalfToFloat(static_cast<const uint16_t*>(buffer)[i]);
    case DataType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(buffer)[i]);
    case DataType::kFloat32: return static_cast<const float*>(buffer)[i];
    case DataType::kFloat64: return static_cast<const double*>(buffer)[i];
  }
  return 0;
}

void StoreElement(void* buffer, DataType dtype, size_t i, double value) {
  switch (dtype) {
    case DataType::kInt8: static_cast<int8_t*>(buffer)[i] = static_cast<int8_t>(value); break;
    case DataType::kInt32: static_cast<int32_t*>(buffer)[i] = static_cast<int32_t>(value); break;
    case DataType::kInt64: static_cast<int64_t*>(buffer)[i] = static_cast<int64_t>(value); break;
    case DataType::kFloat16:
      static_cast<uint16_t*>(buffer)[i] = FloatToHalf(static_cast<float>(value));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(buffer)[i] = FloatToBFloat16(static_cast<float>(value));
      break;
    case DataType::kFloat32: static_cast<float*>(buffer)[i] = static_cast<float>(value); break;
    case DataType::kFloat64: static_cast<double*>(buffer)[i] = value; break;
  }
}

void FillBuffer(void* buffer, DataType dtype, size_t n,
                const std::function<double(size_t)>& value) {
  for (size_t i = 0; i < n; ++i) StoreElement(buffer, dtype, i, value(i));
}

void FillConstant(void* buffer, DataType dtype, size_t n, double value) {
  if (n == 0) return;
  StoreElement(buffer, dtype, 0, value);
  const size_t width = ElementSize(dtype);
  char* bytes = static_cast<char*>(buffer);
  for (size_t i = 1; i < n; ++i) std::memcpy(bytes + i * width, bytes, width);
}

}  // namespace collbench

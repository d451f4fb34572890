// SPDX-License-Identifier: Apache-2.0
// The data every operation sends, chosen so every result is exactly
// predictable per rank and element (docs/design/data-plane.md#validation):
//
//  - data movement (bcast, gather, alltoall, ...): a value that depends on
//    the source rank and the element, wrapping within the type's range of
//    exact integers, so misplaced blocks are caught;
//  - sum: 1..m with m*nranks within the exact range, so any summation
//    order is exact;
//  - prod: 1s and at most six 2s per element, so products are exact powers
//    of two in every type, int8 included;
//  - min/max: small positive integers that differ by rank and element.
//
// Receive buffers are poisoned with kPoison (never a pattern value) before
// the checked call, so an element the library did not write is counted.
// Never zeros: timing on zero-filled buffers can flatter the results.
#ifndef COLLBENCH_ENGINE_SPEC_PATTERN_H_
#define COLLBENCH_ENGINE_SPEC_PATTERN_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "engine_spec/types.h"

namespace collbench {

inline constexpr double kPoison = -1.0;

// Largest integer L such that every integer in [-L, L] is exact in `dtype`
// (capped at 2^31 for the wide types: patterns never need more).
double ExactIntegerLimit(DataType dtype);

// Data-movement value that source rank `rank` holds at element `i`.
double MovedValue(DataType dtype, int rank, size_t i);

// Reduction input of rank `rank` at element `i`, and the exact reduced
// value over ranks 0..nranks-1.
double ReductionInput(DataType dtype, ReduceOp op, int nranks, int rank, size_t i);
double ReducedValue(DataType dtype, ReduceOp op, int nranks, size_t i);

// OK when the reduction patterns stay exact for this many ranks (e.g. an
// int8 sum over more than 127 ranks cannot), else FailedPrecondition.
absl::Status CheckReductionExact(DataType dtype, ReduceOp op, int nranks);

// Reads / writes element i of a host buffer of `dtype` as a double.
double LoadElement(const void* buffer, DataType dtype, size_t i);
void StoreElement(void* buffer, DataType dtype, size_t i, double value);

// Writes value(i) to elements [0, n) of a host buffer.
void FillBuffer(void* buffer, DataType dtype, size_t n,
                const std::function<double(size_t)>& value);
// Sets elements [0, n) to one value (the poison before a checked call).
void FillConstant(void* buffer, DataType dtype, size_t n, double value);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_PATTERN_H_

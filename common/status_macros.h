// SPDX-License-Identifier: Apache-2.0
// Status propagation macros. Abseil 20220623 ships none, so the project keeps
// its own pair here. Both evaluate their argument exactly once.
#ifndef COLLBENCH_COMMON_STATUS_MACROS_H_
#define COLLBENCH_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define COLLBENCH_CONCAT_INNER_(a, b) a##b
#define COLLBENCH_CONCAT_(a, b) COLLBENCH_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                   \
  do {                                          \
    ::absl::Status collbench_status_ = (expr);  \
    if (!collbench_status_.ok()) {              \
      return collbench_status_;                 \
    }                                           \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, StatusOrExpr());` declares/assigns the value or
// returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  COLLBENCH_ASSIGN_OR_RETURN_IMPL_( \
      COLLBENCH_CONCAT_(collbench_statusor_, __LINE__), lhs, expr)

#define COLLBENCH_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) {                                       \
    return std::move(tmp).status();                      \
  }                                                      \
  lhs = std::move(tmp).value()

#endif  // COLLBENCH_COMMON_STATUS_MACROS_H_

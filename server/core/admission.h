// SPDX-License-Identifier: Apache-2.0
// Admission control's vocabulary (docs/design/security.md#admission-and-fairness):
// how a refusal carries the time after which the caller may retry, and
// the refusal counters the metrics read.
//
// A refused CreateRun is RESOURCE_EXHAUSTED with a "retry after" payload in
// whole seconds; the REST API turns it into HTTP 429 with a Retry-After
// header, and the message (also the gRPC status message) says the same.
#ifndef COLLBENCH_SERVER_CORE_ADMISSION_H_
#define COLLBENCH_SERVER_CORE_ADMISSION_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace collbench {

// The payload's type URL on a refused call's Status.
inline constexpr char kRetryAfterPayload[] = "type.collbench.dev/retry-after-seconds";

// `wait` rounded up to whole seconds, at least 1 (HTTP's Retry-After has
// no fractions, and 0 would invite an immediate retry).
int64_t RetryAfterWholeSeconds(absl::Duration wait);

// `status` carrying a retry-after of `seconds`.
absl::Status WithRetryAfter(absl::Status status, int64_t seconds);

// The whole seconds set by WithRetryAfter, if any.
std::optional<int64_t> RetryAfterSeconds(const absl::Status& status);

// CreateRun refusals since the start, by reason.
struct AdmissionRejections {
  int64_t queue_full = 0;    // --max-queued-runs reached
  int64_t rate_limited = 0;  // the caller's --create-rate bucket was empty
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_ADMISSION_H_

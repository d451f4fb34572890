// SPDX-License-Identifier: Apache-2.0
#include "server/core/admission.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"

namespace collbench {

int64_t RetryAfterWholeSeconds(absl::Duration wait) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(wait))));
}

absl::Status WithRetryAfter(absl::Status status, int64_t seconds) {
  status.SetPayload(kRetryAfterPayload, absl::Cord(std::to_string(seconds)));
  return status;
}

std::optional<int64_t> RetryAfterSeconds(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kRetryAfterPayload);
  int64_t seconds = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &seconds)) {
    return std::nullopt;
  }
  return seconds;
}

}  // namespace collbench

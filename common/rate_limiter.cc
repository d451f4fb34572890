// SPDX-License-Identifier: Apache-2.0
#include "common/rate_limiter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace collbench {

absl::StatusOr<double> ParseRatePerSecond(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower == "off") return 0.0;
  absl::string_view number = lower;
  double seconds_per_unit = 1;
  if (const size_t slash = number.find('/'); slash != absl::string_view::npos) {
    const absl::string_view unit = number.substr(slash + 1);
    number = number.substr(0, slash);
    if (unit == "s" || unit == "sec" || unit == "second") {
      seconds_per_unit = 1;
    } else if (unit == "m" || unit == "min" || unit == "minute") {
      seconds_per_unit = 60;
    } else if (unit == "h" || unit == "hour") {
      seconds_per_unit = 3600;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "': the unit after '/' must be s, min or h"));
    }
  }
  double count = 0;
  if (!absl::SimpleAtod(number, &count) || !std::isfinite(count) || count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "': not a rate such as 10/s, 600/min or off"));
  }
  return count / seconds_per_unit;
}

RateLimiter::RateLimiter(RateLimit limit, size_t max_idle_buckets)
    : limit_{limit.per_second, std::max(1, limit.burst)}, max_idle_buckets_(max_idle_buckets) {}

double RateLimiter::TokensAt(const Bucket& bucket, absl::Time now) const {
  const double elapsed_s = std::max(0.0, absl::ToDoubleSeconds(now - bucket.updated));
  return std::min<double>(limit_.burst, bucket.tokens + elapsed_s * limit_.per_second);
}

absl::Duration RateLimiter::Acquire(absl::string_view caller, absl::Time now) {
  if (!enabled()) return absl::ZeroDuration();
  auto it = buckets_.find(caller);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_idle_buckets_) DropFullBuckets(now);
    it = buckets_.emplace(std::string(caller), Bucket{static_cast<double>(limit_.burst), now})
             .first;
  }
  Bucket& bucket = it->second;
  const double tokens = TokensAt(bucket, now);
  if (tokens < 1) {
    return absl::Seconds((1 - tokens) / limit_.per_second);
  }
  bucket.tokens = tokens - 1;
  bucket.updated = now;
  return absl::ZeroDuration();
}

void RateLimiter::DropFullBuckets(absl::Time now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (TokensAt(it->second, now) >= limit_.burst) {
      buckets_.erase(it++);
    } else {
      ++it;
    }
  }
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// Per-caller token buckets for admission control
// (docs/design/security.md#admission-and-fairness): each caller identity has a
// bucket of `burst` tokens that refills at `per_second`; a request takes one
// token or is refused with the time until one is available.
//
// Time is passed in (`now`), as everywhere in the coordinator's core, so
// tests drive a fake clock. Buckets are created on first use; a bucket that
// has refilled completely is the same as no bucket, so idle ones are
// dropped once there are more than `max_idle_buckets`.
//
// Thread safety: none; the owner (the RunManager, the worker's Exec service)
// calls it under its own lock.
#ifndef COLLBENCH_COMMON_RATE_LIMITER_H_
#define COLLBENCH_COMMON_RATE_LIMITER_H_

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace collbench {

struct RateLimit {
  // Sustained rate; 0 turns the limit off.
  double per_second = 0;
  // Requests a caller may make at once after being idle; at least 1.
  int burst = 1;
};

// Parses a rate as the --create-rate flag takes it: "10/s", "600/min",
// "3600/h", a bare number (per second), or "off" / "0" for no limit.
// InvalidArgument quoting the text otherwise.
absl::StatusOr<double> ParseRatePerSecond(absl::string_view text);

class RateLimiter {
 public:
  explicit RateLimiter(RateLimit limit, size_t max_idle_buckets = 10'000);

  // Takes one token from `caller`'s bucket. Returns zero when the request
  // may go ahead; otherwise how long until a token is available (the
  // bucket is left as it was).
  absl::Duration Acquire(absl::string_view caller, absl::Time now);

  bool enabled() const { return limit_.per_second > 0; }
  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time updated;
  };
  // Tokens in `bucket` at `now`, refilled since its last update (at most
  // burst).
  double TokensAt(const Bucket& bucket, absl::Time now) const;
  void DropFullBuckets(absl::Time now);

  const RateLimit limit_;
  const size_t max_idle_buckets_;
  absl::flat_hash_map<std::string, Bucket> buckets_;
};

}  // namespace collbench

#endif  // COLLBENCH_COMMON_RATE_LIMITER_H_

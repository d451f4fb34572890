// SPDX-License-Identifier: Apache-2.0
// Time, injected. A class that needs to know the time takes a Clock; the
// wiring (server/app, a binary's main) hands it RealClock(), a test hands it
// a FakeClock that moves only when told, so a test of a timeout, a schedule
// or a retention pass takes no real time and cannot race the machine.
// Nothing else in the coordinator reads the system clock or sleeps
// (tests/lint/clock_lint.py checks it): what waits is driven by events and
// by the coordinator's tick (docs/design/threading.md).
//
// Thread safety: Now() may be called from any thread; FakeClock's setters
// too.
#ifndef COLLBENCH_COMMON_CLOCK_H_
#define COLLBENCH_COMMON_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace collbench {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// The system clock. Never destroyed; the pointer is valid for the
// process's lifetime.
const Clock* RealClock();

// A clock that stands still until a test moves it. Starts at `start`.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000)) : now_(start) {}
  absl::Time Now() const override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration by) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    now_ += by;
  }
  void Set(absl::Time to) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    now_ = to;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_COMMON_CLOCK_H_

// SPDX-License-Identifier: Apache-2.0
// The one place the coordinator's libraries read the system clock.
#include "common/clock.h"

#include "absl/time/clock.h"

namespace collbench {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

const Clock* RealClock() {
  static const SystemClock* const clock = new SystemClock();
  return clock;
}

}  // namespace collbench

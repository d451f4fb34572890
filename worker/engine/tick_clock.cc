// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/tick_clock.h"

#include <fstream>
#include <string>

namespace collbench {
namespace {

using Steady = std::chrono::steady_clock;

}  // namespace

bool HasInvariantTsc() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

TickClock::TickClock(bool use_tsc) : use_tsc_(false) {
#if defined(__x86_64__)
  if (!use_tsc) return;
  use_tsc_ = true;
  const Steady::time_point t0 = Steady::now();
  const uint64_t ticks0 = Start();
  // Spin rather than sleep: ~10 ms gives a rate good to about 1e-5.
  Steady::time_point t1;
  uint64_t ticks1;
  do {
    t1 = Steady::now();
    ticks1 = End();
  } while (t1 - t0 < std::chrono::milliseconds(10));
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  const double rate = ns / static_cast<double>(ticks1 - ticks0);
  // A TSC from 0.1 to 20 GHz is plausible; anything else, do not trust it.
  if (rate > 0.05 && rate < 10.0) {
    ns_per_tick_ = rate;
  } else {
    use_tsc_ = false;
  }
#endif
}

const TickClock& DefaultTickClock() {
  static const TickClock* clock = new TickClock(HasInvariantTsc());
  return *clock;
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The timed loop's clock: the CPU's invariant time-stamp counter where it
// has one (x86-64 with constant_tsc and nonstop_tsc in /proc/cpuinfo),
// calibrated once against steady_clock; steady_clock itself elsewhere.
//
// Why not steady_clock everywhere: on virtual machines a vDSO
// clock_gettime costs 20-30 ns, so bracketing every iteration with two
// reads cost more than the 50 ns budget, while reading it once per
// iteration (chaining) put the loop's own bookkeeping inside every
// measured interval (+10-17% at 8 bytes). An ordered TSC read costs
// about 15 ns,
// so each iteration is bracketed exactly, with the histogram recorded
// outside the interval.
//
// Thread safety: immutable after construction; DefaultTickClock() is built
// once, thread-safely, on first use (about 10 ms of calibration).
#ifndef COLLBENCH_WORKER_ENGINE_TICK_CLOCK_H_
#define COLLBENCH_WORKER_ENGINE_TICK_CLOCK_H_

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace collbench {

class TickClock {
 public:
  // Uses the TSC when `use_tsc` and this is x86-64; calibrates it.
  explicit TickClock(bool use_tsc);

  // Tick counts that open and close a timed interval; only differences
  // mean anything. Start() waits for earlier work (lfence) so it is not
  // counted; End() (rdtscp) reads only once the timed work has executed.
  uint64_t Start() const {
#if defined(__x86_64__)
    if (use_tsc_) {
      _mm_lfence();
      return __rdtsc();
    }
#endif
    return SteadyNs();
  }
  uint64_t End() const {
#if defined(__x86_64__)
    if (use_tsc_) {
      unsigned int processor;
      return __rdtscp(&processor);
    }
#endif
    return SteadyNs();
  }

  double ns_per_tick() const { return ns_per_tick_; }
  bool uses_tsc() const { return use_tsc_; }

 private:
  static uint64_t SteadyNs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }

  bool use_tsc_;
  double ns_per_tick_ = 1.0;
};

// Whether this CPU's TSC runs at a constant rate through power states.
bool HasInvariantTsc();

// The process-wide clock: TSC when invariant, else steady_clock.
const TickClock& DefaultTickClock();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_TICK_CLOCK_H_

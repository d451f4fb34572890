// SPDX-License-Identifier: Apache-2.0
// How much each program's clock adds to every interval it measures: the
// mean of many empty intervals, for MPI_Wtime (what bench/minimal_mpi_loop
// --clock wtime times each call with, as OSU does) and for collbench-rank's tick
// clock (worker/engine/tick_clock.h). Operations of a few hundred
// nanoseconds are read higher by this much: why bench/fidelity.py's
// reference loop times with collbench-rank's clock, and why its MPI_Wtime
// (osu_rat) column reads lower at 8 bytes. A benchmark: prints numbers, exits 0.
//
//   build/bin/timer_bias_bench [intervals]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "worker/engine/tick_clock.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  if (n <= 0) {
    std::fprintf(stderr, "timer_bias_bench: intervals must be a positive number\n");
    MPI_Finalize();
    return 2;
  }
  double wtime_s = 0;
  for (long i = 0; i < n; ++i) {
    const double start = MPI_Wtime();
    const double end = MPI_Wtime();
    wtime_s += end - start;
  }
  const collbench::TickClock& clock = collbench::DefaultTickClock();
  uint64_t ticks = 0;
  for (long i = 0; i < n; ++i) {
    const uint64_t start = clock.Start();
    const uint64_t end = clock.End();
    ticks += end - start;
  }
  std::printf("empty interval, mean of %ld:\n", n);
  std::printf("  MPI_Wtime() pair (minimal_mpi_loop)   %6.1f ns\n", wtime_s / n * 1e9);
  std::printf("  tick clock Start()/End() (collbench)  %6.1f ns\n",
              static_cast<double>(ticks) * clock.ns_per_tick() / n);
  MPI_Finalize();
  return 0;
}

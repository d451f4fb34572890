// SPDX-License-Identifier: Apache-2.0
// load_bench --hunt: the coordinator's part of a fleet sweep
// (docs/design/workflows.md#hunts) at fleet scale. One process plays every
// worker:
//
//   * starts collbench-coordinator as a child process (store in memory by
//     default, or a fresh SQLite file);
//   * registers --workers fake workers, each on a host of its own
//     (WorkerGateway.Connect streams over --channels connections);
//   * creates one pairwise hunt over them (a workflow of kind hunt): N-1
//     rounds of N/2 pairs, every round's runs created at once;
//   * each fake launcher, when assigned a run, reports it RUNNING, sends its
//     one result (bw at 1 MiB, at a bandwidth a model gives the pair: 10
//     GB/s with +-5% noise, worker --bad at a third of it) and reports it
//     SUCCEEDED, at once: what is measured is the coordinator, not MPI;
//   * follows the workflow to its end, sampling the coordinator's CPU and
//     memory (/proc) every second, and reads the verdict back.
//
// Prints the rounds and runs admitted and completed per second, the
// coordinator's CPU (cores, over the hunt) and its peak memory, and whether
// the hunt named the bad worker CONFIRMED_BAD and no other. Exits 0
// whatever the numbers; non-zero only when it could not run or the hunt
// did not end.
#ifndef COLLBENCH_BENCH_LOAD_HUNT_BENCH_H_
#define COLLBENCH_BENCH_LOAD_HUNT_BENCH_H_

namespace collbench::load_bench {

// Parses argv (every argument but "--hunt", which selects this mode) and
// runs the benchmark. Returns the process exit status.
int RunHuntBench(int argc, char** argv);

}  // namespace collbench::load_bench

#endif  // COLLBENCH_BENCH_LOAD_HUNT_BENCH_H_

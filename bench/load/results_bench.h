// SPDX-License-Identifier: Apache-2.0
// load_bench --results: the result path at fleet rate
// (docs/design/store.md#the-journal). One process plays
// every launcher:
//
//   * starts collbench-coordinator as a child process with its store on
//     disk (a fresh SQLite file under --store-dir) or in memory;
//   * registers --runs fake launchers (WorkerGateway.Connect streams over
//     --channels connections) and creates --runs one-rank runs, so every
//     launcher is assigned one run;
//   * each launcher reports its run RUNNING, then sends results 0, 1, ...
//     of it at an even share of --rate results/s (open loop: each result
//     has a due time, and its latency counts from that time, so a
//     coordinator that falls behind shows it), keeping at most --window
//     unacknowledged (as the worker's spool would hold them);
//   * a result's latency ends at the ResultAck whose sequence covers it:
//     the coordinator's word that it is stored durably;
//   * meanwhile a steady --api-rate of GetRun / ListRuns(50) calls measures
//     what API callers see;
//   * a launcher that has every result of its run acknowledged reports the
//     run SUCCEEDED; at the end every run is read back and must be
//     SUCCEEDED with sizes_done equal to what was sent.
//
// Prints sustained results/s (acks over the stream's window and per
// second), result-to-ack percentiles, unary percentiles and the
// coordinator's CPU, with PASS / BELOW TARGET for the targets.
// Exits 0 whatever the numbers; non-zero only when it could not run.
#ifndef COLLBENCH_BENCH_LOAD_RESULTS_BENCH_H_
#define COLLBENCH_BENCH_LOAD_RESULTS_BENCH_H_

namespace collbench::load_bench {

// Parses argv (every argument but "--results", which selects this mode)
// and runs the benchmark. Returns the process exit status.
int RunResultsBench(int argc, char** argv);

}  // namespace collbench::load_bench

#endif  // COLLBENCH_BENCH_LOAD_RESULTS_BENCH_H_

// SPDX-License-Identifier: Apache-2.0
// The whole of collbench-rank / collbench-rank-mpich: parses the flags,
// initialises MPI, validates the job, runs the sweep or scenario and returns
// the process exit code (0 ok, 1 run failed or wrong results, 2 bad usage or
// input).
#ifndef COLLBENCH_WORKER_ENGINE_RANK_MAIN_H_
#define COLLBENCH_WORKER_ENGINE_RANK_MAIN_H_

namespace collbench {

int RunRankMain(int argc, char** argv);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_RANK_MAIN_H_

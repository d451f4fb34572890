// SPDX-License-Identifier: Apache-2.0
// The agent tests' main: `agent_test launch-shim ARGS...`, or this binary
// called through a link named collbench-launch-shim, runs the launch shim
// (so mpirun / mpiexec in launch_e2e_test.cc can use this binary as their
// remote-shell agent); anything else runs the tests.
#include <cstring>

#include "gtest/gtest.h"
#include "worker/agent/launch_shim.h"

int main(int argc, char** argv) {
  if (const int shim_exit = collbench::LaunchShimMain(argc, argv); shim_exit >= 0) {
    return shim_exit;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

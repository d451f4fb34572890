// The agent tests' main: `agent_test launch-shim ARGS...` runs the launch
// shim (so mpirun / mpiexec in launch_e2e_test.cc can use this binary as
// their remote-shell agent); anything else runs the tests.
#include <cstring>

#include "gtest/gtest.h"
#include "worker/agent/launch_shim.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "launch-shim") == 0) {
    return collbench::RunLaunchShim(argc - 1, argv + 1);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

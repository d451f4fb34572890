// SPDX-License-Identifier: Apache-2.0
// The main of the tests of the coordinator's core and what calls it: every
// absl::Mutex acquisition feeds Abseil's lock-order graph, and an order
// seen both ways aborts the test with both stacks
// (docs/design/threading.md#threads-and-locks).
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

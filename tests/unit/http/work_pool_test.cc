// SPDX-License-Identifier: Apache-2.0
// The HTTP handlers' thread pool (server/http/work_pool.h): jobs run on
// the pool's threads, a full queue refuses at once, and Shutdown() runs
// what was queued before it returns.
#include "server/http/work_pool.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

TEST(WorkPoolTest, AFullQueueRefusesAndShutdownRunsWhatWasQueued) {
  WorkPool pool(/*threads=*/1, /*max_queued=*/2);
  absl::Notification started, release;
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.TrySubmit([&] {
    started.Notify();
    release.WaitForNotification();
    ++ran;
  }));
  started.WaitForNotification();  // the one thread is busy
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_FALSE(pool.TrySubmit([&] { ++ran; })) << "a third job waited in a queue of two";
  release.Notify();
  pool.Shutdown();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(pool.TrySubmit([&] { ++ran; })) << "a job was taken after Shutdown()";
}

}  // namespace
}  // namespace collbench

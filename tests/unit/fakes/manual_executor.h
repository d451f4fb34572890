// SPDX-License-Identifier: Apache-2.0
// An Executor (common/executor.h) that runs nothing until the test says
// so: RunUntilIdle() runs what was posted, and what that posts, on the
// test's thread. A test of event-driven code then decides when the work an
// event handed over happens, and sees it done when the call returns.
#ifndef COLLBENCH_TESTS_UNIT_FAKES_MANUAL_EXECUTOR_H_
#define COLLBENCH_TESTS_UNIT_FAKES_MANUAL_EXECUTOR_H_

#include <deque>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/executor.h"

namespace collbench {

class ManualExecutor final : public Executor {
 public:
  void Post(std::function<void()> task) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) queue_.push_back(std::move(task));
  }
  void Shutdown() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    queue_.clear();
  }
  // Runs tasks until none is queued; returns how many ran.
  int RunUntilIdle() ABSL_LOCKS_EXCLUDED(mu_) {
    int ran = 0;
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mu_);
        if (queue_.empty()) return ran;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
      ++ran;
    }
  }
  size_t queued() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return queue_.size();
  }

 private:
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_FAKES_MANUAL_EXECUTOR_H_

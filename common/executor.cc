// SPDX-License-Identifier: Apache-2.0
#include "common/executor.h"

#include <algorithm>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace collbench {
namespace {

class ThreadPool final : public Executor {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Work(); });
  }
  ~ThreadPool() override { Shutdown(); }

  void Post(std::function<void()> task) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (!stopping_) queue_.push_back(std::move(task));
  }

  void Shutdown() override ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      queue_.clear();
    }
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

 private:
  // Each thread: the next task, or the end once stopping.
  void Work() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &ThreadPool::HasWorkOrStops));
        if (stopping_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  bool HasWorkOrStops() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<Executor> NewThreadPool(int threads) {
  return std::make_unique<ThreadPool>(threads);
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// A small, bounded pool of threads for the HTTP handlers that may block
// (store queries, report rendering, CreateRun), so the event loop never
// waits on them. A job that finds the queue full is refused at once: the
// caller answers 429 rather than queueing without bound.
//
// Thread safety: every method may be called from any thread.
#ifndef COLLBENCH_SERVER_HTTP_WORK_POOL_H_
#define COLLBENCH_SERVER_HTTP_WORK_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace collbench {

class WorkPool {
 public:
  // `threads` (at least 1) run the jobs; at most `max_queued` wait.
  WorkPool(int threads, size_t max_queued);
  ~WorkPool();  // Shutdown()

  // Queues `job`; false (and `job` dropped) when the queue is full or the
  // pool shut down.
  bool TrySubmit(std::function<void()> job) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the jobs already queued, then joins the threads. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  const size_t max_queued_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_WORK_POOL_H_

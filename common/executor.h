// SPDX-License-Identifier: Apache-2.0
// Work handed from where something happened (an event sink, a tick) to
// threads that may take their time over it, so the thread that saw the
// event never waits on the work: the workflows' executor
// (docs/design/threading.md). One interface, a pool of threads for the
// coordinator (NewThreadPool) and a manual one for tests
// (tests/unit/fakes/manual_executor.h) that runs what is posted only when
// told.
//
// Thread safety: Post and Shutdown may be called from any thread (Shutdown
// not from a task of the same executor).
#ifndef COLLBENCH_COMMON_EXECUTOR_H_
#define COLLBENCH_COMMON_EXECUTOR_H_

#include <functional>
#include <memory>

namespace collbench {

class Executor {
 public:
  virtual ~Executor() = default;
  // Queues `task` to run on one of the executor's threads, in the order
  // posted; after Shutdown() it is dropped. Never runs it on the caller's
  // thread, so a caller may hold its locks.
  virtual void Post(std::function<void()> task) = 0;
  // Drops the tasks still queued and waits for those running to return:
  // no task runs once it has returned. Idempotent.
  virtual void Shutdown() = 0;
};

// `threads` (at least 1) threads that run the posted tasks; Shutdown() (and
// the destructor) joins them.
std::unique_ptr<Executor> NewThreadPool(int threads);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_EXECUTOR_H_

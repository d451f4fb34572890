// SPDX-License-Identifier: Apache-2.0
// One thread running a libevent event_base: the HTTP server's loop, which
// owns every connection, reads requests, writes replies and event streams.
// Other threads hand it work with Post(); the loop runs posted work in the
// order it was posted.
//
// Ownership: owns the event_base; what the caller registers on base()
// must be freed on the loop thread before Stop().
// Thread safety: Post() and Stop() from any thread; base() is for the loop
// thread (and for setting up before Start()).
#ifndef COLLBENCH_SERVER_HTTP_EVENT_LOOP_H_
#define COLLBENCH_SERVER_HTTP_EVENT_LOOP_H_

#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

struct event;
struct event_base;

namespace collbench {

class EventLoop {
 public:
  static absl::StatusOr<std::unique_ptr<EventLoop>> Create();
  ~EventLoop();  // Stop()

  event_base* base() const { return base_; }
  // Starts the loop thread. REQUIRES: called once.
  void Start();
  // Runs `work` on the loop thread soon. Work posted once Stop() began
  // is dropped.
  void Post(std::function<void()> work) ABSL_LOCKS_EXCLUDED(mu_);
  // Posts `work` and waits until it ran. REQUIRES: Start() was called,
  // Stop() was not, and the caller is not on the loop thread.
  void RunAndWait(std::function<void()> work);
  bool InLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // Ends the loop after the work posted so far and joins its thread.
  // Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  EventLoop(event_base* base, event* wake) : base_(base), wake_(wake) {}
  static void OnWake(int fd, short what, void* arg);
  void RunPosted() ABSL_LOCKS_EXCLUDED(mu_);

  event_base* const base_;
  event* const wake_;  // made active by Post()
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_HTTP_EVENT_LOOP_H_

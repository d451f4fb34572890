// SPDX-License-Identifier: Apache-2.0
#include "server/http/event_loop.h"

#include <event2/event.h>
#include <event2/thread.h>

#include <memory>
#include <mutex>
#include <utility>

#include "absl/synchronization/notification.h"

namespace collbench {
namespace {

// libevent's locks must be on before the first event_base is made, so
// that event_active() may be called from other threads.
bool UseThreads() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] { ok = evthread_use_pthreads() == 0; });
  return ok;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventLoop>> EventLoop::Create() {
  if (!UseThreads()) return absl::InternalError("libevent: no thread support");
  event_base* base = event_base_new();
  if (base == nullptr) return absl::InternalError("libevent: event_base_new failed");
  // The wake event has no descriptor: only event_active() fires it.
  std::unique_ptr<EventLoop> loop(new EventLoop(base, nullptr));
  event* wake = event_new(base, -1, EV_PERSIST, &EventLoop::OnWake, loop.get());
  if (wake == nullptr) {
    event_base_free(base);
    return absl::InternalError("libevent: event_new failed");
  }
  const_cast<event*&>(loop->wake_) = wake;
  return loop;
}

EventLoop::~EventLoop() {
  Stop();
  event_free(wake_);
  event_base_free(base_);
}

void EventLoop::Start() {
  thread_ = std::thread([this] { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); });
}

void EventLoop::Post(std::function<void()> work) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    posted_.push_back(std::move(work));
  }
  event_active(wake_, EV_READ, 0);
}

void EventLoop::RunAndWait(std::function<void()> work) {
  absl::Notification done;
  Post([&work, &done] {
    work();
    done.Notify();
  });
  done.WaitForNotification();
}

void EventLoop::OnWake(int fd, short what, void* arg) { static_cast<EventLoop*>(arg)->RunPosted(); }

void EventLoop::RunPosted() {
  for (;;) {
    std::deque<std::function<void()>> batch;
    {
      absl::MutexLock lock(&mu_);
      batch.swap(posted_);
    }
    if (batch.empty()) return;
    for (std::function<void()>& work : batch) work();
  }
}

void EventLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    // Work posted until now still runs: the break is posted behind it.
    posted_.push_back([this] { event_base_loopbreak(base_); });
  }
  event_active(wake_, EV_READ, 0);
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  posted_.clear();
}

}  // namespace collbench

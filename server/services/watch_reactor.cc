// SPDX-License-Identifier: Apache-2.0
#include "server/services/watch_reactor.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "api/status_mapping.h"
#include "server/core/watch_feed.h"

namespace collbench {
namespace {

class WatchReactor final : public grpc::ServerWriteReactor<v1::RunEvent> {
 public:
  WatchReactor(RunManager* manager, WatchHub* hub, WatcherLimits* limits,
               std::unique_ptr<WatcherSlot> slot, const std::string& run_name)
      : hub_(hub), limits_(limits), slot_(std::move(slot)), sink_(std::make_shared<Sink>(this)) {
    absl::StatusOr<v1::Run> run = manager->GetRun(run_name);
    if (!run.ok()) {
      Finish(ToGrpcStatus(run.status()));
      return;
    }
    run_ = run->name();
    absl::MutexLock lock(&mu_);
    // Subscribe before reading the store: nothing falls between the two,
    // and the feed drops what arrives twice.
    hub_->Subscribe(run_, sink_);
    subscribed_ = true;
    if (absl::StatusOr<std::string> replayed = feed_.Replay(*manager, run_); !replayed.ok()) {
      FinishLocked(ToGrpcStatus(replayed.status()));
      return;
    }
    MaybeWriteLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      return;
    }
    feed_.queue().pop_front();
    MaybeWriteLocked();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    sink_->Detach();
    if (subscribed_) hub_->Unsubscribe(run_, sink_.get());
    delete this;
  }

 private:
  // What the hub holds: forwards to the reactor until it is done.
  class Sink final : public RunEventSink {
   public:
    explicit Sink(WatchReactor* owner) : owner_(owner) {}
    void OnEvent(const v1::RunEvent& event) override {
      absl::MutexLock lock(&mu_);
      if (owner_ != nullptr) owner_->Deliver(event);
    }
    void OnEnd() override {
      absl::MutexLock lock(&mu_);
      if (owner_ != nullptr) owner_->End();
    }
    void Detach() {
      absl::MutexLock lock(&mu_);
      owner_ = nullptr;
    }

   private:
    absl::Mutex mu_;
    WatchReactor* owner_ ABSL_GUARDED_BY(mu_);
  };

  void Deliver(const v1::RunEvent& event) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    const size_t limit = static_cast<size_t>(std::max(limits_->options().buffer_events, 1));
    if (feed_.queue().size() >= limit) {
      // Falling behind: end it rather than queue without bound.
      limits_->CountTooSlow();
      FinishLocked(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("watcher too slow: ", feed_.queue().size(),
                       " events not yet read (the coordinator buffers at most ", limit,
                       " per watcher); watch again to resume from the stored state")));
      return;
    }
    feed_.Add(event);
    MaybeWriteLocked();
  }

  void End() {
    absl::MutexLock lock(&mu_);
    feed_.End();
    MaybeWriteLocked();
  }

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (!feed_.empty()) {
      writing_ = true;
      StartWrite(&feed_.queue().front());
    } else if (feed_.ended()) {
      FinishLocked(grpc::Status::OK);
    }
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  WatchHub* const hub_;
  WatcherLimits* const limits_;
  const std::unique_ptr<WatcherSlot> slot_;
  const std::shared_ptr<Sink> sink_;
  std::string run_;
  bool subscribed_ = false;
  absl::Mutex mu_;
  WatchFeed feed_ ABSL_GUARDED_BY(mu_);  // what is still to be written, in order
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerWriteReactor<v1::RunEvent>* NewWatchReactor(RunManager* manager, WatchHub* hub,
                                                        WatcherLimits* limits,
                                                        std::unique_ptr<WatcherSlot> slot,
                                                        const std::string& run) {
  return new WatchReactor(manager, hub, limits, std::move(slot), run);
}

}  // namespace collbench

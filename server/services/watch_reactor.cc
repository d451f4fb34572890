#include "server/services/watch_reactor.h"

#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "api/convert.h"
#include "api/status_mapping.h"

namespace collbench {
namespace {

class WatchReactor final : public grpc::ServerWriteReactor<v1::RunEvent> {
 public:
  WatchReactor(RunManager* manager, WatchHub* hub, const std::string& run_name)
      : hub_(hub), sink_(std::make_shared<Sink>(this)) {
    absl::StatusOr<v1::Run> run = manager->GetRun(run_name);
    if (!run.ok()) {
      Finish(ToGrpcStatus(run.status()));
      return;
    }
    run_ = run->name();
    absl::MutexLock lock(&mu_);
    // Subscribe before reading the store: nothing falls between the two,
    // and duplicates are dropped by sequence below.
    hub_->Subscribe(run_, sink_);
    subscribed_ = true;
    absl::StatusOr<std::vector<v1::SizeResult>> results = manager->GetResults(run_);
    v1::RunEvent state;
    state.set_run(run_);
    *state.mutable_state_change() = *run;
    EnqueueLocked(state);
    if (results.ok()) {
      for (const v1::SizeResult& r : *results) {
        v1::RunEvent event;
        event.set_run(run_);
        *event.mutable_result() = r;
        EnqueueLocked(event);
      }
    }
    // A run that already ended gets no more events.
    if (IsFinalRunState(run->state())) ended_ = true;
    MaybeWriteLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      return;
    }
    queue_.pop_front();
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
    EnqueueLocked(event);
    MaybeWriteLocked();
  }

  void End() {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    MaybeWriteLocked();
  }

  void EnqueueLocked(const v1::RunEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || ended_) return;
    if (event.has_result()) {
      if (event.result().sequence() <= last_sequence_) return;  // replayed already
      last_sequence_ = event.result().sequence();
    }
    queue_.push_back(event);
  }

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (!queue_.empty()) {
      writing_ = true;
      StartWrite(&queue_.front());
    } else if (ended_) {
      FinishLocked(grpc::Status::OK);
    }
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  WatchHub* const hub_;
  const std::shared_ptr<Sink> sink_;
  std::string run_;
  bool subscribed_ = false;
  absl::Mutex mu_;
  std::deque<v1::RunEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int64_t last_sequence_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace

grpc::ServerWriteReactor<v1::RunEvent>* NewWatchReactor(RunManager* manager, WatchHub* hub,
                                                        const std::string& run) {
  return new WatchReactor(manager, hub, run);
}

}  // namespace collbench

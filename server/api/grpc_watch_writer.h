// SPDX-License-Identifier: Apache-2.0
// A watch (server/api/watch.h) as a gRPC server stream: the thin writer
// of WatchRun and WatchWorkflow. It writes one event at a time, taking
// the next only once the last is written, so a client that does not read
// leaves its events in the watch's bounded queue and slows nobody; a
// watch cut short ends the call at once with its status (RESOURCE_EXHAUSTED
// "watcher too slow"), a write in flight or not. gRPC's callback API
// serves it: no thread waits on it.
//
// Ownership: gRPC owns the writer and deletes it when the call is done;
// it holds the watch and detaches it then.
// Thread safety: gRPC's callbacks and the watch's notifications may come
// from any thread; mu_ orders them. Lock order: the watch's notify lock,
// then mu_, then the watch's lock (Take).
#ifndef COLLBENCH_SERVER_API_GRPC_WATCH_WRITER_H_
#define COLLBENCH_SERVER_API_GRPC_WATCH_WRITER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "api/status_mapping.h"
#include "server/api/watch.h"

namespace collbench {

template <typename Event>
class GrpcWatchWriter final : public grpc::ServerWriteReactor<Event> {
 public:
  explicit GrpcWatchWriter(std::shared_ptr<Watch<Event>> watch) : watch_(std::move(watch)) {
    watch_->SetNotify([this] { Pump(); });
    Pump();
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      return;
    }
    PumpLocked();
  }

  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    watch_->SetNotify(nullptr);  // waits for a notification in flight
    watch_->Detach();
    delete this;
  }

 private:
  void Pump() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    PumpLocked();
  }

  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    if (writing_) {
      // Only a watch cut short ends before the write in flight is done.
      typename Watch<Event>::Batch cut = watch_->Take(0);
      if (cut.last && !cut.end.ok()) FinishLocked(ToGrpcStatus(cut.end));
      return;
    }
    typename Watch<Event>::Batch batch = watch_->Take(1);
    if (!batch.events.empty()) {
      writing_ = true;
      event_ = std::move(batch.events.front());
      this->StartWrite(&event_);
    } else if (batch.last) {
      FinishLocked(ToGrpcStatus(batch.end));
    }
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    this->Finish(status);
  }

  const std::shared_ptr<Watch<Event>> watch_;
  absl::Mutex mu_;
  Event event_ ABSL_GUARDED_BY(mu_);  // being written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// Ends a watch call that may not start (refused, or nothing to watch).
template <typename Event>
class RefusedWatchWriter final : public grpc::ServerWriteReactor<Event> {
 public:
  explicit RefusedWatchWriter(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_GRPC_WATCH_WRITER_H_

// SPDX-License-Identifier: Apache-2.0
#include "server/api/worker_streams.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "common/log.h"

namespace collbench {

bool WorkerStream::Send(const v1::CoordinatorMessage& message, bool* overflowed_now) {
  absl::MutexLock lock(&mu_);
  if (reactor_ == nullptr || overflowed_) return false;
  if (max_queued_ > 0 && queue_.size() >= max_queued_) {
    overflowed_ = true;
    *overflowed_now = true;
    // The message being written (front) stays until its write completes.
    if (writing_) {
      queue_.erase(queue_.begin() + 1, queue_.end());
    } else {
      queue_.clear();
    }
    return false;
  }
  queue_.push_back(message);
  if (!writing_) WriteNextLocked();
  return true;
}

bool WorkerStream::overflowed() {
  absl::MutexLock lock(&mu_);
  return overflowed_;
}

void WorkerStream::WriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!queue_.empty()) queue_.pop_front();
  if (ok && reactor_ != nullptr && !overflowed_ && !queue_.empty()) WriteNextLocked();
}

void WorkerStream::Close() {
  absl::MutexLock lock(&mu_);
  reactor_ = nullptr;
}

void WorkerStream::WriteNextLocked() {
  writing_ = true;
  reactor_->StartWrite(&queue_.front());
}

bool WorkerStreams::Send(const std::string& worker, const v1::CoordinatorMessage& message) {
  std::shared_ptr<WorkerStream> stream;
  {
    absl::MutexLock lock(&mu_);
    auto it = streams_.find(worker);
    if (it == streams_.end()) return false;
    stream = it->second;
  }
  bool overflowed = false;
  const bool sent = stream->Send(message, &overflowed);
  if (overflowed) {
    absl::MutexLock lock(&mu_);
    ++send_queue_overflows_;
    LogWarn("worker.send_queue_overflow",
            absl::StrFormat("send queue to %s overflowed (%d messages); ending its stream", worker,
                            options_.max_queued))
        .Str("worker", worker)
        .Int("queued", static_cast<int64_t>(options_.max_queued));
  }
  return sent;
}

bool WorkerStreams::AdmitUnregistered(const std::string& source) {
  const int limit = options_.max_unregistered_per_source;
  absl::MutexLock lock(&mu_);
  int& open = unregistered_[source];
  if (limit > 0 && open >= limit) {
    if (open == 0) unregistered_.erase(source);
    return false;
  }
  ++open;
  return true;
}

void WorkerStreams::ReleaseUnregistered(const std::string& source) {
  absl::MutexLock lock(&mu_);
  auto it = unregistered_.find(source);
  if (it != unregistered_.end() && --it->second <= 0) unregistered_.erase(it);
}

int64_t WorkerStreams::send_queue_overflows() const {
  absl::MutexLock lock(&mu_);
  return send_queue_overflows_;
}

void WorkerStreams::Attach(const std::string& worker, std::shared_ptr<WorkerStream> stream) {
  absl::MutexLock lock(&mu_);
  streams_[worker] = std::move(stream);
}

void WorkerStreams::Detach(const std::string& worker, const WorkerStream* stream) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(worker);
  if (it != streams_.end() && it->second.get() == stream) streams_.erase(it);
}

size_t WorkerStreams::connected() const {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

}  // namespace collbench

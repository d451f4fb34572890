// SPDX-License-Identifier: Apache-2.0
#include "server/core/result_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/log.h"

namespace collbench {

ResultWriter::ResultWriter(Store* store, BatchDone done, ResultWriterOptions options)
    : store_(store), done_(std::move(done)), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

ResultWriter::~ResultWriter() { Stop(); }

void ResultWriter::Submit(Pending result) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return;  // dropped: never acknowledged
  ++submitted_;
  queue_.push_back(std::move(result));
}

void ResultWriter::Flush() {
  absl::MutexLock lock(&mu_);
  const int64_t target = submitted_;
  auto written = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return completed_ >= target;
  };
  mu_.Await(absl::Condition(&written));
}

void ResultWriter::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  thread_.join();
}

ResultWriter::Stats ResultWriter::stats() {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void ResultWriter::Loop() {
  for (;;) {
    const Batch batch = NextBatch();
    if (batch.rows.empty()) return;
    Write(batch);
  }
}

ResultWriter::Batch ResultWriter::NextBatch() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  };
  mu_.Await(absl::Condition(&ready));
  if (queue_.empty()) {  // stopping, and everything is written
    stopped_ = true;
    return {};
  }
  // More rows may share this transaction's fsync: wait a little for them.
  auto full = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() >= options_.max_batch_rows || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&full), options_.max_delay);
  const size_t n = std::min(queue_.size(), options_.max_batch_rows);
  Batch batch;
  batch.rows.reserve(n);
  batch.workers.reserve(n);
  batch.received.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    batch.rows.push_back(std::move(queue_.front().row));
    batch.workers.push_back(std::move(queue_.front().worker));
    batch.received.push_back(queue_.front().received);
    queue_.pop_front();
  }
  return batch;
}

void ResultWriter::Write(const Batch& batch) {
  const absl::StatusOr<std::vector<bool>> inserted = store_->AddResults(batch.rows);
  if (!inserted.ok()) {
    LogError("store.error",
             absl::StrFormat("storing %d results failed, none acknowledged (the workers keep "
                             "them): %s",
                             batch.rows.size(), inserted.status().message()))
        .Int("results", static_cast<int64_t>(batch.rows.size()))
        .Error(inserted.status());
  }
  done_(batch, inserted);
  absl::MutexLock lock(&mu_);
  completed_ += static_cast<int64_t>(batch.rows.size());
  ++stats_.batches;
  stats_.rows += static_cast<int64_t>(batch.rows.size());
  stats_.largest_batch = std::max<int64_t>(stats_.largest_batch, batch.rows.size());
  if (!inserted.ok()) ++stats_.failed_batches;
}

}  // namespace collbench

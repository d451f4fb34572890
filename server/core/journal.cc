// SPDX-License-Identifier: Apache-2.0
#include "server/core/journal.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "server/core/no_io_lock.h"

namespace collbench {
namespace {

// Results and worker rows in `write`: what the batch size counts.
size_t RowsOf(const Store::Write& write) {
  if (const auto* results = std::get_if<Store::AddResultsWrite>(&write)) {
    return std::max<size_t>(1, results->rows.size());
  }
  if (const auto* workers = std::get_if<Store::UpsertWorkersWrite>(&write)) {
    return std::max<size_t>(1, workers->workers.size());
  }
  return 1;
}

// A refusal by a write's own check rather than by the store: the rest of
// its batch can still be committed.
bool RefusedByOneWrite(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsAlreadyExists(status) ||
         absl::IsInvalidArgument(status) || absl::IsFailedPrecondition(status);
}

}  // namespace

Journal::Journal(Store* store, JournalOptions options) : store_(store), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

Journal::~Journal() { Stop(); }

uint64_t Journal::Append(JournalClient* client, Store::Write write, JournalNote note) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return 0;  // dropped: never committed nor reported
  const uint64_t sequence = ++appended_;
  queued_rows_ += RowsOf(write);
  prompt_queued_ += note.awaited || note.prompt;
  queue_.push_back({sequence, client, std::move(write), std::move(note)});
  return sequence;
}

uint64_t Journal::last_appended() {
  absl::MutexLock lock(&mu_);
  return appended_;
}

absl::Status Journal::Await(uint64_t sequence) {
  CheckMayBlock("Journal", "Await");
  if (sequence == 0) return absl::UnavailableError("the store's journal is stopped");
  absl::MutexLock lock(&mu_);
  auto reported = [this, sequence]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return done_ >= sequence;
  };
  mu_.Await(absl::Condition(&reported));
  auto it = outcomes_.find(sequence);
  if (it == outcomes_.end()) return absl::OkStatus();
  absl::Status outcome = std::move(it->second);
  outcomes_.erase(it);
  return outcome;
}

void Journal::Flush() {
  CheckMayBlock("Journal", "Flush");
  absl::MutexLock lock(&mu_);
  const uint64_t target = appended_;
  auto reported = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return done_ >= target;
  };
  mu_.Await(absl::Condition(&reported));
}

void Journal::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  thread_.join();
}

Journal::Stats Journal::stats() {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void Journal::Loop() {
  for (;;) {
    std::vector<Pending> batch = NextBatch();
    if (batch.empty()) return;
    Write(batch);
  }
}

std::vector<Journal::Pending> Journal::NextBatch() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  };
  mu_.Await(absl::Condition(&ready));
  if (queue_.empty()) {  // stopping, and everything is committed
    stopped_ = true;
    return {};
  }
  // More writes may share this transaction's fsync: wait a little for them,
  // unless a caller already waits for one of these.
  auto full = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queued_rows_ >= options_.max_batch_rows || stopping_ || prompt_queued_ > 0;
  };
  mu_.AwaitWithTimeout(absl::Condition(&full), options_.max_delay);
  std::vector<Pending> batch;
  size_t rows = 0;
  while (!queue_.empty() && (batch.empty() || rows + RowsOf(queue_.front().write) <=
                                                     options_.max_batch_rows)) {
    rows += RowsOf(queue_.front().write);
    prompt_queued_ -= queue_.front().note.awaited || queue_.front().note.prompt;
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  queued_rows_ -= rows;
  return batch;
}

std::vector<Committed> Journal::CommitBatch(std::vector<Pending>& batch) {
  // Consecutive results go to the store as one write, so a transaction
  // counts each run's progress once however many results it brings.
  // The writes move into the transaction and back out of it after, each
  // pending one's rows to it: a result is never copied on its way.
  std::vector<Store::Write> writes;
  struct Placed {
    size_t write;  // index in writes
    size_t first;  // its first row there (results)
    size_t rows;   // its rows (results)
  };
  std::vector<Placed> placed;
  writes.reserve(batch.size());
  placed.reserve(batch.size());
  for (Pending& p : batch) {
    auto* rows = std::get_if<Store::AddResultsWrite>(&p.write);
    auto* last = writes.empty() ? nullptr : std::get_if<Store::AddResultsWrite>(&writes.back());
    const size_t count = rows != nullptr ? rows->rows.size() : 0;
    if (rows != nullptr && last != nullptr) {
      placed.push_back({writes.size() - 1, last->rows.size(), count});
      last->rows.insert(last->rows.end(), std::make_move_iterator(rows->rows.begin()),
                        std::make_move_iterator(rows->rows.end()));
    } else {
      placed.push_back({writes.size(), 0, count});
      writes.push_back(std::move(p.write));
    }
  }
  absl::StatusOr<std::vector<Store::WriteResult>> results = store_->Commit(writes);
  for (size_t i = 0; i < batch.size(); ++i) {
    Store::Write& lent = writes[placed[i].write];
    auto* rows = std::get_if<Store::AddResultsWrite>(&lent);
    if (rows == nullptr) {
      batch[i].write = std::move(lent);
      continue;
    }
    Store::AddResultsWrite own;
    own.rows.reserve(placed[i].rows);
    for (size_t r = placed[i].first; r < placed[i].first + placed[i].rows; ++r) {
      own.rows.push_back(std::move(rows->rows[r]));
    }
    batch[i].write = std::move(own);
  }
  std::vector<Committed> committed(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results.ok() && RefusedByOneWrite(results.status()) && batch.size() > 1) {
      // One write is at fault: each alone, so the others are kept.
      std::vector<Store::Write> one = {batch[i].write};
      absl::StatusOr<std::vector<Store::WriteResult>> alone = store_->Commit(one);
      committed[i].status = alone.status();
      if (alone.ok()) committed[i].result = std::move(alone->front());
    } else {
      committed[i].status = results.status();
      if (const auto* rows = std::get_if<Store::AddResultsWrite>(&batch[i].write);
          results.ok() && rows != nullptr) {
        const std::vector<bool>& inserted = (*results)[placed[i].write].inserted;
        const auto from = inserted.begin() + static_cast<ptrdiff_t>(placed[i].first);
        committed[i].result.inserted.assign(from,
                                            from + static_cast<ptrdiff_t>(rows->rows.size()));
      }
    }
    committed[i].write = std::move(batch[i].write);
    committed[i].time = batch[i].note.time;
    committed[i].origin = std::move(batch[i].note.origin);
  }
  return committed;
}

void Journal::Write(std::vector<Pending>& batch) {
  size_t rows = 0;
  for (const Pending& p : batch) rows += RowsOf(p.write);
  std::vector<Committed> committed = CommitBatch(batch);
  std::vector<absl::Status> statuses;
  statuses.reserve(committed.size());
  size_t failed = 0;
  for (const Committed& c : committed) {
    statuses.push_back(c.status);
    failed += !c.status.ok();
  }
  if (failed == committed.size()) {
    LogError("store.error",
             absl::StrFormat("a transaction of %d writes failed, none is kept: %s",
                             committed.size(), statuses.front().message()))
        .Int("writes", static_cast<int64_t>(committed.size()))
        .Error(statuses.front());
  } else if (failed > 0) {
    LogWarn("store.refused", absl::StrFormat("%d of %d writes refused by the store", failed,
                                             committed.size()))
        .Int("writes", static_cast<int64_t>(committed.size()))
        .Int("refused", static_cast<int64_t>(failed));
  }
  // Each client once, with its writes in order.
  std::vector<std::pair<JournalClient*, std::vector<Committed>>> by_client;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].client == nullptr) continue;
    auto it = std::find_if(by_client.begin(), by_client.end(),
                           [&](const auto& entry) { return entry.first == batch[i].client; });
    if (it == by_client.end()) it = by_client.insert(by_client.end(), {batch[i].client, {}});
    it->second.push_back(std::move(committed[i]));
  }
  for (auto& [client, writes] : by_client) client->OnCommitted(writes);
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].note.awaited) outcomes_[batch[i].sequence] = statuses[i];
  }
  done_ = batch.back().sequence;
  ++stats_.batches;
  stats_.writes += static_cast<int64_t>(batch.size());
  stats_.rows += static_cast<int64_t>(rows);
  stats_.largest_batch_rows = std::max<int64_t>(stats_.largest_batch_rows, rows);
  if (failed == committed.size()) ++stats_.failed_batches;
}

}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The result writer (server/core/result_writer.h): group commit over a
// store whose transactions the test can hold open or fail.
#include "server/core/result_writer.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/server/forwarding_store.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::Each;
using ::testing::Le;

// The in-memory store; AddResults can be held (it waits until released,
// as a slow fsync would) or made to fail (as on a full disk).
class GatedStore final : public ForwardingStore {
 public:
  GatedStore() {
    for (const char* name : {"runs/a", "runs/b"}) {
      v1::Run run;
      run.set_name(name);
      (void)CreateRun(run);
    }
  }

  absl::StatusOr<std::vector<bool>> AddResults(const std::vector<ResultRow>& rows) override {
    absl::MutexLock lock(&mu_);
    ++entered_;
    auto open = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !held_; };
    mu_.Await(absl::Condition(&open));
    batch_sizes_.push_back(static_cast<int>(rows.size()));
    if (fail_) return absl::ResourceExhaustedError("store test.db is full");
    return ForwardingStore::AddResults(rows);
  }
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  void SetFail(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_ = fail;
  }
  // Waits until `n` transactions have started.
  void AwaitEntered(int n) {
    absl::MutexLock lock(&mu_);
    auto entered = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entered_ >= n; };
    mu_.Await(absl::Condition(&entered));
  }
  std::vector<int> batch_sizes() {
    absl::MutexLock lock(&mu_);
    return batch_sizes_;
  }

 private:
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> batch_sizes_ ABSL_GUARDED_BY(mu_);
};

// What the writer reported, row by row, in the order it reported them.
struct Reports {
  absl::Mutex mu;
  std::vector<int64_t> sequences ABSL_GUARDED_BY(mu);  // stored
  std::vector<bool> inserted ABSL_GUARDED_BY(mu);
  std::vector<int64_t> failed ABSL_GUARDED_BY(mu);     // reported as not stored

  ResultWriter::BatchDone Callback() {
    return [this](const ResultWriter::Batch& batch,
                  const absl::StatusOr<std::vector<bool>>& added) {
      absl::MutexLock lock(&mu);
      for (size_t i = 0; i < batch.rows.size(); ++i) {
        const int64_t sequence = batch.rows[i].result.sequence();
        if (!added.ok()) {
          failed.push_back(sequence);
          continue;
        }
        sequences.push_back(sequence);
        inserted.push_back((*added)[i]);
      }
    };
  }
  size_t stored() {
    absl::MutexLock lock(&mu);
    return sequences.size();
  }
};

ResultWriter::Pending Row(const std::string& run, int64_t sequence) {
  ResultWriter::Pending pending;
  pending.worker = "workers/a";
  pending.row.run = run;
  pending.row.result.set_sequence(sequence);
  pending.row.result.set_bytes(8);
  pending.received = absl::UnixEpoch();
  return pending;
}

// While one transaction waits on the disk, what arrives meanwhile shares
// the next one: two transactions for 101 results.
TEST(ResultWriterTest, ResultsArrivingDuringAWriteShareTheNextTransaction) {
  GatedStore store;
  Reports reports;
  ResultWriter writer(&store, reports.Callback(), {absl::Milliseconds(1), 4096});
  store.Hold();
  writer.Submit(Row("runs/a", 0));
  store.AwaitEntered(1);
  for (int64_t s = 1; s <= 100; ++s) writer.Submit(Row(s % 2 ? "runs/a" : "runs/b", s));
  store.Release();
  writer.Flush();
  EXPECT_THAT(store.batch_sizes(), ElementsAre(1, 100));
  EXPECT_EQ(writer.stats().batches, 2);
  EXPECT_EQ(writer.stats().rows, 101);
  EXPECT_EQ(writer.stats().largest_batch, 100);
  EXPECT_EQ(store.GetRun("runs/a")->sizes_done() + store.GetRun("runs/b")->sizes_done(), 101);
}

// Nothing is reported (so nothing acknowledged) before its transaction
// has returned.
TEST(ResultWriterTest, ReportsOnlyAfterTheTransactionReturned) {
  GatedStore store;
  Reports reports;
  ResultWriter writer(&store, reports.Callback());
  store.Hold();
  writer.Submit(Row("runs/a", 0));
  store.AwaitEntered(1);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(reports.stored(), 0u);
  EXPECT_TRUE(store.ListResults("runs/a")->empty());
  store.Release();
  writer.Flush();
  EXPECT_EQ(reports.stored(), 1u);
  EXPECT_EQ(store.ListResults("runs/a")->size(), 1u);
}

TEST(ResultWriterTest, KeepsSubmissionOrderWithinAndAcrossBatches) {
  GatedStore store;
  Reports reports;
  ResultWriter writer(&store, reports.Callback(), {absl::Milliseconds(1), /*max_batch_rows=*/7});
  std::vector<int64_t> submitted;
  for (int64_t s = 0; s < 200; ++s) {
    writer.Submit(Row("runs/a", s));
    submitted.push_back(s);
  }
  writer.Submit(Row("runs/a", 5));  // a duplicate: reported, not new
  writer.Flush();
  submitted.push_back(5);
  absl::MutexLock lock(&reports.mu);
  EXPECT_EQ(reports.sequences, submitted);
  EXPECT_FALSE(reports.inserted.back());
  EXPECT_THAT(store.batch_sizes(), Each(Le(7)));
  EXPECT_EQ(store.GetRun("runs/a")->sizes_done(), 200);
}

// A failed transaction is reported as failed and stores nothing of its
// batch (so nothing of it is acknowledged); the next one works again.
TEST(ResultWriterTest, AFailedWriteIsReportedAndStoresNothing) {
  GatedStore store;
  Reports reports;
  ResultWriter writer(&store, reports.Callback());
  store.SetFail(true);
  writer.Submit(Row("runs/a", 0));
  writer.Submit(Row("runs/a", 1));
  writer.Flush();
  store.SetFail(false);
  writer.Submit(Row("runs/a", 1));
  writer.Flush();
  absl::MutexLock lock(&reports.mu);
  EXPECT_THAT(reports.failed, ElementsAre(0, 1));
  EXPECT_THAT(reports.sequences, ElementsAre(1));
  EXPECT_EQ(writer.stats().failed_batches, 1);
  EXPECT_EQ(store.ListResults("runs/a")->size(), 1u);
  EXPECT_EQ(store.GetRun("runs/a")->sizes_done(), 1);
}

// The operator sees a failed write in the log, with the store's reason.
TEST(ResultWriterTest, AFailedWriteIsLoggedAsAStoreError) {
  std::vector<std::string> lines;
  LogOptions options;
  options.format = LogFormat::kText;
  options.sink = [&lines](absl::string_view line) { lines.emplace_back(line); };
  SetLogOptions(std::move(options));
  GatedStore store;
  Reports reports;
  ResultWriter writer(&store, reports.Callback());
  store.SetFail(true);
  writer.Submit(Row("runs/a", 0));
  writer.Flush();
  SetLogOptions(LogOptions());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], ::testing::HasSubstr(" ERROR store.error storing 1 results failed"));
  EXPECT_THAT(lines[0], ::testing::HasSubstr("error=\"store test.db is full\" "
                                             "code=RESOURCE_EXHAUSTED"));
}

// Stop writes and reports everything submitted before it, without waiting
// out the batching delay; what comes after is dropped, never reported.
TEST(ResultWriterTest, StopWritesEverythingQueuedAndDropsWhatComesAfter) {
  GatedStore store;
  Reports reports;
  ResultWriter writer(&store, reports.Callback(), {absl::Seconds(30), 4096});
  for (int64_t s = 0; s < 1000; ++s) writer.Submit(Row("runs/b", s));
  const absl::Time start = absl::Now();
  writer.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(reports.stored(), 1000u);
  EXPECT_EQ(store.ListResults("runs/b")->size(), 1000u);
  writer.Submit(Row("runs/b", 1000));
  writer.Flush();
  EXPECT_EQ(reports.stored(), 1000u);
  EXPECT_EQ(store.ListResults("runs/b")->size(), 1000u);
}

}  // namespace
}  // namespace collbench

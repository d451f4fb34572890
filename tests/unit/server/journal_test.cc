// SPDX-License-Identifier: Apache-2.0
// The journal (server/core/journal.h): group commit over a store whose
// transactions the test can hold open or fail, the order in which clients
// hear of their writes, a failed write's neighbours, and waiting for one.
#include "server/core/journal.h"

#include <string>
#include <variant>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/server/gated_store.h"

namespace collbench {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Le;

// What a client heard, write by write, in the order it heard it.
class Recorder final : public JournalClient {
 public:
  void OnCommitted(std::vector<Committed>& writes) override {
    absl::MutexLock lock(&mu);
    ++reports;
    for (const Committed& c : writes) {
      const auto* results = std::get_if<Store::AddResultsWrite>(&c.write);
      const int64_t sequence = results != nullptr ? results->rows[0].result.sequence() : -1;
      origins.push_back(c.origin);
      if (!c.status.ok()) {
        failed.push_back(sequence);
        continue;
      }
      sequences.push_back(sequence);
      if (results != nullptr) inserted.push_back(c.result.inserted[0]);
    }
  }
  size_t stored() {
    absl::MutexLock lock(&mu);
    return sequences.size();
  }

  absl::Mutex mu;
  int reports ABSL_GUARDED_BY(mu) = 0;
  std::vector<int64_t> sequences ABSL_GUARDED_BY(mu);  // stored
  std::vector<bool> inserted ABSL_GUARDED_BY(mu);
  std::vector<int64_t> failed ABSL_GUARDED_BY(mu);  // reported as not stored
  std::vector<std::string> origins ABSL_GUARDED_BY(mu);
};

Store::Write Row(const std::string& run, int64_t sequence) {
  Store::AddResultsWrite write;
  write.rows.push_back({run, {}});
  write.rows.back().result.set_sequence(sequence);
  write.rows.back().result.set_bytes(8);
  return write;
}

// While one transaction waits on the disk, what arrives meanwhile shares
// the next one: two transactions for 101 results, each run's progress
// counted once per transaction.
TEST(JournalTest, WritesArrivingDuringATransactionShareTheNextOne) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store, {absl::Milliseconds(1), 4096});
  store.Hold();
  journal.Append(&recorder, Row("runs/a", 0));
  store.AwaitEntered(1);
  for (int64_t s = 1; s <= 100; ++s) journal.Append(&recorder, Row(s % 2 ? "runs/a" : "runs/b", s));
  store.Release();
  journal.Flush();
  EXPECT_THAT(store.batch_rows(), ElementsAre(1, 100));
  EXPECT_EQ(journal.stats().batches, 2);
  EXPECT_EQ(journal.stats().rows, 101);
  EXPECT_EQ(journal.stats().largest_batch_rows, 100);
  EXPECT_EQ(store.GetRun("runs/a")->sizes_done() + store.GetRun("runs/b")->sizes_done(), 101);
  absl::MutexLock lock(&recorder.mu);
  EXPECT_EQ(recorder.reports, 2);  // once per transaction
}

// A prompt write (someone waits for its report) does not wait out the
// batching delay, and takes what is queued before it along; an ordinary
// write alone does wait. With a one-hour delay, "at once" is unmistakable.
TEST(JournalTest, APromptWriteGoesAtOnceAndAnOrdinaryOneWaits) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store, {absl::Hours(1), 4096});
  journal.Append(&recorder, Row("runs/a", 0));
  journal.Append(&recorder, Row("runs/b", 1), {.prompt = true});
  store.AwaitEntered(1);
  {
    absl::MutexLock lock(&recorder.mu);
    auto reported = [&recorder]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(recorder.mu) {
      return recorder.reports == 1;
    };
    recorder.mu.Await(absl::Condition(&reported));
    EXPECT_THAT(recorder.sequences, ElementsAre(0, 1));
  }
  journal.Append(&recorder, Row("runs/a", 2));
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(store.transactions(), 1);  // the ordinary one waits for company
  journal.Stop();                      // ... or for the end
  EXPECT_EQ(store.transactions(), 2);
  EXPECT_THAT(store.batch_rows(), ElementsAre(2, 1));
}

// Nothing is reported (so nothing acknowledged) before its transaction
// has returned.
TEST(JournalTest, ReportsOnlyAfterTheTransactionReturned) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store);
  store.Hold();
  journal.Append(&recorder, Row("runs/a", 0));
  store.AwaitEntered(1);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(recorder.stored(), 0u);
  EXPECT_TRUE(store.ListResults("runs/a")->empty());
  store.Release();
  journal.Flush();
  EXPECT_EQ(recorder.stored(), 1u);
  EXPECT_EQ(store.ListResults("runs/a")->size(), 1u);
}

TEST(JournalTest, KeepsAppendOrderWithinAndAcrossBatches) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store, {absl::Milliseconds(1), /*max_batch_rows=*/7});
  std::vector<int64_t> appended;
  for (int64_t s = 0; s < 200; ++s) {
    journal.Append(&recorder, Row("runs/a", s), {.origin = absl::StrCat("w", s)});
    appended.push_back(s);
  }
  journal.Append(&recorder, Row("runs/a", 5));  // a duplicate: reported, not new
  journal.Flush();
  appended.push_back(5);
  absl::MutexLock lock(&recorder.mu);
  EXPECT_EQ(recorder.sequences, appended);
  EXPECT_FALSE(recorder.inserted.back());
  EXPECT_EQ(recorder.origins[7], "w7");
  EXPECT_THAT(store.batch_rows(), Each(Le(7)));
  EXPECT_EQ(store.GetRun("runs/a")->sizes_done(), 200);
}

// A failed transaction is reported as failed and stores nothing of its
// batch (so nothing of it is acknowledged); the next one works again.
TEST(JournalTest, AFailedTransactionIsReportedAndStoresNothing) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store);
  store.SetFail(true);
  journal.Append(&recorder, Row("runs/a", 0));
  journal.Append(&recorder, Row("runs/a", 1));
  journal.Flush();
  store.SetFail(false);
  journal.Append(&recorder, Row("runs/a", 1));
  journal.Flush();
  absl::MutexLock lock(&recorder.mu);
  EXPECT_THAT(recorder.failed, ElementsAre(0, 1));
  EXPECT_THAT(recorder.sequences, ElementsAre(1));
  EXPECT_EQ(journal.stats().failed_batches, 1);
  EXPECT_EQ(store.ListResults("runs/a")->size(), 1u);
  EXPECT_EQ(store.GetRun("runs/a")->sizes_done(), 1);
}

// A write the store refuses on its own account (a result of a run it does
// not hold) fails alone: the others of its batch are kept.
TEST(JournalTest, AWriteRefusedOnItsOwnAccountFailsAlone) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store, {absl::Milliseconds(50), 4096});
  store.Hold();
  journal.Append(&recorder, Row("runs/a", 0));
  store.AwaitEntered(1);
  journal.Append(&recorder, Row("runs/a", 1));
  journal.Append(&recorder, Row("runs/gone", 0));
  journal.Append(&recorder, Row("runs/b", 0));
  v1::Run twice;
  twice.set_name("runs/a");
  const uint64_t refused = journal.Append(&recorder, Store::CreateRunWrite{twice}, {.awaited = true});
  store.Release();
  EXPECT_TRUE(absl::IsAlreadyExists(journal.Await(refused)));
  journal.Flush();
  absl::MutexLock lock(&recorder.mu);
  EXPECT_THAT(recorder.sequences, ElementsAre(0, 1, 0));
  EXPECT_THAT(recorder.failed, ElementsAre(0, -1));  // runs/gone's result, the second create
  EXPECT_EQ(store.ListResults("runs/a")->size(), 2u);
  EXPECT_EQ(store.ListResults("runs/b")->size(), 1u);
}

// Await returns once the write is durable, with its outcome when it was
// appended awaited; a write appended after Stop is never committed.
TEST(JournalTest, AwaitReturnsTheOutcomeOnceDurable) {
  GatedStore store({"runs/a", "runs/b"});
  Journal journal(&store);
  store.Hold();
  v1::Run run;
  run.set_name("runs/c");
  const uint64_t created = journal.Append(nullptr, Store::CreateRunWrite{run}, {.awaited = true});
  store.AwaitEntered(1);
  EXPECT_TRUE(absl::IsNotFound(store.GetRun("runs/c").status()));
  store.Release();
  EXPECT_TRUE(journal.Await(created).ok());
  EXPECT_TRUE(store.GetRun("runs/c").ok());
  journal.Stop();
  const uint64_t late = journal.Append(nullptr, Store::CreateRunWrite{run}, {.awaited = true});
  EXPECT_TRUE(absl::IsUnavailable(journal.Await(late)));
}

// The operator sees a failed transaction in the log, with the store's reason.
TEST(JournalTest, AFailedTransactionIsLoggedAsAStoreError) {
  std::vector<std::string> lines;
  LogOptions options;
  options.format = LogFormat::kText;
  options.sink = [&lines](absl::string_view line) { lines.emplace_back(line); };
  SetLogOptions(std::move(options));
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store);
  store.SetFail(true);
  journal.Append(&recorder, Row("runs/a", 0));
  journal.Flush();
  SetLogOptions(LogOptions());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr(" ERROR store.error a transaction of 1 writes failed"));
  EXPECT_THAT(lines[0], HasSubstr("error=\"store test.db is full\" code=RESOURCE_EXHAUSTED"));
}

// Stop writes and reports everything appended before it, without waiting
// out the batching delay; what comes after is dropped, never reported.
TEST(JournalTest, StopWritesEverythingQueuedAndDropsWhatComesAfter) {
  GatedStore store({"runs/a", "runs/b"});
  Recorder recorder;
  Journal journal(&store, {absl::Seconds(30), 4096});
  for (int64_t s = 0; s < 1000; ++s) journal.Append(&recorder, Row("runs/b", s));
  const absl::Time start = absl::Now();
  journal.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(recorder.stored(), 1000u);
  EXPECT_EQ(store.ListResults("runs/b")->size(), 1000u);
  journal.Append(&recorder, Row("runs/b", 1000));
  journal.Flush();
  EXPECT_EQ(recorder.stored(), 1000u);
  EXPECT_EQ(store.ListResults("runs/b")->size(), 1000u);
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// The Store contract (server/store/store.h), one suite run against both the
// in-memory fake and the SQLite store. What only the file promises (restarts,
// kill -9) is in sqlite_store_test.cc.
#include "server/store/store.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/unit/store/store_test_util.h"

namespace collbench {
namespace {

using store_test::MakeResult;
using store_test::MakeRun;
using store_test::MakeWorker;
using store_test::Sequences;
using store_test::TempStoreDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

enum class Kind { kMemory, kSqlite };

class StoreContractTest : public testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kMemory) {
      store_ = NewMemoryStore();
      return;
    }
    auto store = OpenSqliteStore(dir_.path() + "/store.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Creates `run`, failing the test if that fails.
  void Create(const v1::Run& run) {
    ASSERT_TRUE(store_->CreateRun(run).ok()) << run.name();
  }

  TempStoreDir dir_;
  std::unique_ptr<Store> store_;
};

bool Same(const google::protobuf::Message& a,
          const google::protobuf::Message& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

TEST_P(StoreContractTest, CreatedRunReadsBackWhole) {
  v1::Run run = MakeRun(1, 1000, v1::RUNNING, "req-1");
  run.set_error("none yet");
  run.set_launcher("workers/a");
  run.add_hosts()->set_worker("workers/a");
  Create(run);
  absl::StatusOr<v1::Run> got = store_->GetRun("runs/0001");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(Same(*got, run)) << got->DebugString();
}

TEST_P(StoreContractTest, CreatingATakenNameIsAlreadyExists) {
  Create(MakeRun(1, 1000, v1::QUEUED));
  absl::Status status = store_->CreateRun(MakeRun(1, 2000, v1::FAILED));
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(status.message(), HasSubstr("runs/0001"));
  EXPECT_EQ(store_->GetRun("runs/0001")->state(), v1::QUEUED);
}

TEST_P(StoreContractTest, CreatingATakenRequestIdIsAlreadyExists) {
  Create(MakeRun(1, 1000, v1::QUEUED, "req"));
  absl::Status status = store_->CreateRun(MakeRun(2, 2000, v1::QUEUED, "req"));
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(status.message(), HasSubstr("runs/0001"));
  EXPECT_EQ(store_->GetRun("runs/0002").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreContractTest, RunsWithoutRequestIdDoNotCollide) {
  Create(MakeRun(1, 1000, v1::QUEUED));
  Create(MakeRun(2, 1000, v1::QUEUED));
}

TEST_P(StoreContractTest, MalformedNamesAreInvalidArgument) {
  v1::Run run = MakeRun(1, 1000, v1::QUEUED);
  for (const char* name : {"", "runs/", "1", "workers/1"}) {
    run.set_name(name);
    EXPECT_EQ(store_->CreateRun(run).code(), absl::StatusCode::kInvalidArgument)
        << name;
  }
  v1::Worker worker = MakeWorker("a", v1::READY);
  worker.set_name("a");
  EXPECT_EQ(store_->UpsertWorker(worker).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, MissingRunIsNotFoundNamingIt) {
  absl::StatusOr<v1::Run> got = store_->GetRun("runs/nope");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("runs/nope"));
  absl::Status update = store_->UpdateRun(MakeRun(7, 1, v1::RUNNING));
  EXPECT_EQ(update.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(update.message(), HasSubstr("runs/0007"));
}

TEST_P(StoreContractTest, UpdateReplacesEveryField) {
  v1::Run run = MakeRun(1, 1000, v1::RUNNING, "req");
  run.set_error("old");
  run.add_rank_hosts("h0");
  Create(run);
  v1::Run updated = MakeRun(1, 1000, v1::FAILED, "req");
  updated.mutable_spec()->set_operation("bcast");
  updated.set_sizes_done(3);
  ASSERT_TRUE(store_->UpdateRun(updated).ok());
  absl::StatusOr<v1::Run> got = store_->GetRun("runs/0001");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(Same(*got, updated)) << got->DebugString();
  EXPECT_EQ(got->error(), "");
  EXPECT_TRUE(got->rank_hosts().empty());
}

TEST_P(StoreContractTest, UpdateCanMoveTheRunInTimeAndRequestId) {
  Create(MakeRun(1, 1000, v1::QUEUED, "old"));
  Create(MakeRun(2, 2000, v1::QUEUED, "other"));
  ASSERT_TRUE(store_->UpdateRun(MakeRun(1, 3000, v1::QUEUED, "new")).ok());
  EXPECT_EQ(store_->FindRunByRequestId("old").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->FindRunByRequestId("new")->name(), "runs/0001");
  auto page = store_->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->runs.size(), 2u);
  EXPECT_EQ(page->runs[0].name(), "runs/0001");  // now the newest
  EXPECT_EQ(store_->UpdateRun(MakeRun(1, 3000, v1::QUEUED, "other")).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_P(StoreContractTest, FindsRunsByRequestId) {
  Create(MakeRun(1, 1000, v1::QUEUED, "req-a"));
  Create(MakeRun(2, 1000, v1::QUEUED, "req-b"));
  Create(MakeRun(3, 1000, v1::QUEUED));
  absl::StatusOr<v1::Run> got = store_->FindRunByRequestId("req-b");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name(), "runs/0002");
  EXPECT_EQ(store_->FindRunByRequestId("req-c").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->FindRunByRequestId("").status().code(),
            absl::StatusCode::kNotFound);
}

// Every run exactly once, newest first, ties on create_time broken by name.
TEST_P(StoreContractTest, PagingVisitsEveryRunOnceNewestFirst) {
  std::vector<std::tuple<int64_t, std::string>> expected;
  for (int i = 0; i < 250; ++i) {
    const int64_t time_ns = 1'000'000'000LL * (i / 3);  // triples tie
    v1::Run run = MakeRun(i, time_ns, v1::QUEUED);
    Create(run);
    expected.emplace_back(time_ns, run.name());
  }
  std::sort(expected.rbegin(), expected.rend());
  std::vector<std::tuple<int64_t, std::string>> listed;
  std::string token;
  int pages = 0;
  do {
    auto page = store_->ListRuns(7, token, v1::RUN_STATE_UNSPECIFIED);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_LE(page->runs.size(), 7u);
    for (const v1::Run& run : page->runs) {
      listed.emplace_back(store_test::CreateTimeNs(run), run.name());
    }
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 100);
  EXPECT_EQ(pages, 36);  // ceil(250 / 7)
  EXPECT_EQ(listed, expected);
}

TEST_P(StoreContractTest, PageSizeDefaultsTo50) {
  for (int i = 0; i < 60; ++i) Create(MakeRun(i, i, v1::QUEUED));
  auto page = store_->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->runs.size(), 50u);
  EXPECT_FALSE(page->next_page_token.empty());
  auto rest = store_->ListRuns(1'000'000, page->next_page_token,
                               v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->runs.size(), 10u);
  EXPECT_TRUE(rest->next_page_token.empty());
}

TEST_P(StoreContractTest, ExactlyFullLastPageHasNoToken) {
  for (int i = 0; i < 4; ++i) Create(MakeRun(i, i, v1::QUEUED));
  auto page = store_->ListRuns(4, "", v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->runs.size(), 4u);
  EXPECT_TRUE(page->next_page_token.empty());
}

TEST_P(StoreContractTest, StateFilterPagesOverMatchingRunsOnly) {
  const v1::RunState states[] = {v1::QUEUED, v1::SUCCEEDED, v1::FAILED};
  for (int i = 0; i < 30; ++i) Create(MakeRun(i, i, states[i % 3]));
  std::vector<std::string> names;
  std::string token;
  do {
    auto page = store_->ListRuns(4, token, v1::SUCCEEDED);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const v1::Run& run : page->runs) {
      EXPECT_EQ(run.state(), v1::SUCCEEDED);
      names.push_back(run.name());
    }
    token = page->next_page_token;
  } while (!token.empty());
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names.front(), "runs/0028");
  EXPECT_EQ(names.back(), "runs/0001");
}

TEST_P(StoreContractTest, PagingIgnoresRunsCreatedMeanwhile) {
  for (int i = 0; i < 10; ++i) Create(MakeRun(i, 100 + i, v1::QUEUED));
  auto first = store_->ListRuns(5, "", v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(first.ok());
  Create(MakeRun(50, 1000, v1::QUEUED));  // newer than everything listed
  auto second =
      store_->ListRuns(5, first->next_page_token, v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->runs.size(), 5u);
  EXPECT_EQ(second->runs.front().name(), "runs/0004");
  EXPECT_EQ(second->runs.back().name(), "runs/0000");
  EXPECT_TRUE(second->next_page_token.empty());
}

TEST_P(StoreContractTest, BadPageRequestsAreInvalidArgument) {
  for (int i = 0; i < 3; ++i) Create(MakeRun(i, i, v1::QUEUED));
  for (const char* token : {"garbage!", "Zm9v", "cDF8MHwxMnw"}) {
    EXPECT_EQ(
        store_->ListRuns(1, token, v1::RUN_STATE_UNSPECIFIED).status().code(),
        absl::StatusCode::kInvalidArgument)
        << token;
  }
  auto page = store_->ListRuns(1, "", v1::RUN_STATE_UNSPECIFIED);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(
      store_->ListRuns(1, page->next_page_token, v1::QUEUED).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListRuns(-1, "", v1::RUN_STATE_UNSPECIFIED).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, UnfinishedRunsOldestFirst) {
  Create(MakeRun(1, 500, v1::RUNNING));
  Create(MakeRun(2, 100, v1::SUCCEEDED));
  Create(MakeRun(3, 300, v1::QUEUED));
  Create(MakeRun(4, 200, v1::FAILED));
  Create(MakeRun(5, 400, v1::SCHEDULED));
  Create(MakeRun(6, 50, v1::CANCELLED));
  auto runs = store_->ListUnfinishedRuns();
  ASSERT_TRUE(runs.ok()) << runs.status();
  std::vector<std::string> names;
  for (const v1::Run& run : *runs) names.push_back(run.name());
  EXPECT_THAT(names, ElementsAre("runs/0003", "runs/0005", "runs/0001"));
}

TEST_P(StoreContractTest, ResultIsStoredOnceAndDuplicatesAreIgnored) {
  Create(MakeRun(1, 1, v1::RUNNING));
  v1::SizeResult result = MakeResult(0, 8);
  EXPECT_EQ(store_->AddResult("runs/0001", result).value(), true);
  v1::SizeResult resent = MakeResult(0, 8);
  resent.set_avg_s(99.0);  // a duplicate never overwrites
  EXPECT_EQ(store_->AddResult("runs/0001", resent).value(), false);
  auto results = store_->ListResults("runs/0001");
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 1u);
  EXPECT_TRUE(Same(results->front(), result));
}

// The iteration synchronization and every rank's statistics survive the
// store (docs/design/data-plane.md#iteration-synchronization: stored with every run and result).
TEST_P(StoreContractTest, SyncAndPerRankStatisticsReadBack) {
  v1::Run run = MakeRun(1, 1000, v1::QUEUED);
  run.mutable_spec()->set_sync(v1::SYNC_NONE);
  Create(run);
  EXPECT_EQ(store_->GetRun("runs/0001").value().spec().sync(), v1::SYNC_NONE);
  v1::SizeResult result = MakeResult(0, 8);
  result.set_sync(v1::SYNC_NONE);
  for (int rank = 0; rank < 3; ++rank) {
    v1::RankTiming* t = result.add_ranks();
    t->set_rank(rank);
    t->set_host(rank == 2 ? "node-b" : "node-a");
    t->set_mean_s(1e-6 * (rank + 1));
    t->set_p50_s(0.9e-6 * (rank + 1));
    t->set_p99_s(2e-6 * (rank + 1));
    t->set_straggler(rank == 2);
  }
  result.set_slowest_rank(2);
  result.set_slowest_vs_median(1.5);
  ASSERT_TRUE(store_->AddResult("runs/0001", result).ok());
  auto results = store_->ListResults("runs/0001");
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 1u);
  EXPECT_TRUE(Same((*results)[0], result)) << (*results)[0].DebugString();
}

TEST_P(StoreContractTest, ResultsListBySequencePerRun) {
  Create(MakeRun(1, 1, v1::RUNNING));
  Create(MakeRun(2, 2, v1::RUNNING));
  for (int64_t sequence : {5, 0, 3, 1}) {
    ASSERT_TRUE(store_->AddResult("runs/0001", MakeResult(sequence, 8)).ok());
  }
  ASSERT_TRUE(store_->AddResult("runs/0002", MakeResult(2, 8)).ok());
  EXPECT_THAT(Sequences(store_->ListResults("runs/0001").value()),
              ElementsAre(0, 1, 3, 5));
  EXPECT_THAT(Sequences(store_->ListResults("runs/0002").value()),
              ElementsAre(2));
}

TEST_P(StoreContractTest, ResultErrors) {
  Create(MakeRun(1, 1, v1::RUNNING));
  EXPECT_TRUE(store_->ListResults("runs/0001").value().empty());
  auto missing = store_->AddResult("runs/9", MakeResult(0, 8));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("runs/9"));
  EXPECT_EQ(store_->ListResults("runs/9").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->AddResult("runs/0001", MakeResult(-1, 8)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, ConcurrentResultsAreEachStoredOnce) {
  Create(MakeRun(1, 1, v1::RUNNING));
  constexpr int kThreads = 6, kPerThread = 20;
  std::atomic<int> inserted{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each sequence is sent by two threads: one insert, one duplicate.
      for (int i = 0; i < kPerThread; ++i) {
        const int64_t sequence = ((t / 2) * kPerThread) + i;
        auto added = store_->AddResult("runs/0001", MakeResult(sequence, 8));
        if (!added.ok()) ++failed;
        if (added.ok() && *added) ++inserted;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(inserted.load(), kThreads / 2 * kPerThread);
  EXPECT_EQ(store_->ListResults("runs/0001")->size(),
            static_cast<size_t>(kThreads / 2 * kPerThread));
}

TEST_P(StoreContractTest, WorkersUpsertAndListByName) {
  ASSERT_TRUE(store_->UpsertWorker(MakeWorker("b", v1::READY)).ok());
  ASSERT_TRUE(store_->UpsertWorker(MakeWorker("a", v1::BUSY)).ok());
  v1::Worker lost = MakeWorker("b", v1::LOST);
  ASSERT_TRUE(store_->UpsertWorker(lost).ok());
  auto workers = store_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  ASSERT_EQ(workers->size(), 2u);
  EXPECT_EQ((*workers)[0].name(), "workers/a");
  EXPECT_EQ((*workers)[0].state(), v1::BUSY);
  EXPECT_TRUE(Same((*workers)[1], lost));
}

// A worker's credential (secret hash and issue time) lives apart from its
// row: rewriting the row keeps it, and only DeleteWorker forgets both.
TEST_P(StoreContractTest, WorkerCredentialsSurviveRowWritesUntilDeleted) {
  const absl::Time issued_a = absl::FromUnixSeconds(1700000000) + absl::Nanoseconds(123);
  const absl::Time issued_b = issued_a + absl::Minutes(5);
  ASSERT_TRUE(store_->SetWorkerSecretHash("workers/a", "hash-a", issued_a).ok());
  ASSERT_TRUE(store_->UpsertWorker(MakeWorker("a", v1::READY)).ok());
  ASSERT_TRUE(store_->UpsertWorker(MakeWorker("a", v1::LOST)).ok());
  ASSERT_TRUE(store_->SetWorkerSecretHash("workers/b", "hash-b1", issued_a).ok());
  ASSERT_TRUE(store_->SetWorkerSecretHash("workers/b", "hash-b2", issued_b).ok());
  auto credentials = store_->ListWorkerCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  ASSERT_EQ(credentials->size(), 2u);
  EXPECT_EQ(credentials->at("workers/a").secret_hash, "hash-a");
  EXPECT_EQ(credentials->at("workers/a").issue_time, issued_a);  // to the nanosecond
  EXPECT_EQ(credentials->at("workers/b").secret_hash, "hash-b2");
  EXPECT_EQ(credentials->at("workers/b").issue_time, issued_b);
  ASSERT_TRUE(store_->DeleteWorker("workers/a").ok());
  EXPECT_TRUE(store_->ListWorkers()->empty());
  EXPECT_EQ(store_->ListWorkerCredentials()->count("workers/a"), 0u);
  EXPECT_EQ(store_->DeleteWorker("workers/a").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->SetWorkerSecretHash("nope", "h", issued_a).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->SetWorkerSecretHash("workers/c", "", issued_a).code(),
            absl::StatusCode::kInvalidArgument);
}

// The coordinator's result path: a batch of results and their runs'
// progress in one call; each new result counts once, duplicates (within the
// batch or stored before) not at all.
TEST_P(StoreContractTest, AddResultsStoresNewRowsAndCountsThemIntoProgress) {
  Create(MakeRun(1, 1, v1::RUNNING));
  Create(MakeRun(2, 2, v1::RUNNING));
  ASSERT_TRUE(store_->AddResult("runs/0001", MakeResult(0, 8)).ok());
  v1::SizeResult wrong = MakeResult(2, 8);
  wrong.set_wrong(3);
  const std::vector<Store::ResultRow> rows = {
      {"runs/0001", MakeResult(0, 8)},  // stored before
      {"runs/0001", MakeResult(1, 8)},
      {"runs/0002", MakeResult(0, 8)},
      {"runs/0001", wrong},
      {"runs/0001", MakeResult(1, 8)},  // twice in the batch
  };
  absl::StatusOr<std::vector<bool>> inserted = store_->AddResults(rows);
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  EXPECT_THAT(*inserted, ElementsAre(false, true, true, true, false));
  EXPECT_THAT(Sequences(store_->ListResults("runs/0001").value()), ElementsAre(0, 1, 2));
  const v1::Run first = store_->GetRun("runs/0001").value();
  EXPECT_EQ(first.sizes_done(), 2);  // AddResult alone counts nothing
  EXPECT_EQ(first.wrong(), 3u);
  EXPECT_EQ(store_->GetRun("runs/0002").value().sizes_done(), 1);
  // Every way of reading a run sees the same progress.
  EXPECT_EQ(store_->ListUnfinishedRuns().value()[0].sizes_done(), 2);
  EXPECT_EQ(store_->ListRuns(0, "", v1::RUNNING).value().runs[1].sizes_done(), 2);
}

TEST_P(StoreContractTest, AddResultsIsAllOrNothing) {
  Create(MakeRun(1, 1, v1::RUNNING));
  absl::StatusOr<std::vector<bool>> missing =
      store_->AddResults({{"runs/0001", MakeResult(0, 8)}, {"runs/0404", MakeResult(0, 8)}});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("runs/0404"));
  absl::StatusOr<std::vector<bool>> negative =
      store_->AddResults({{"runs/0001", MakeResult(0, 8)}, {"runs/0001", MakeResult(-1, 8)}});
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_->ListResults("runs/0001").value().empty());
  EXPECT_EQ(store_->GetRun("runs/0001").value().sizes_done(), 0);
  EXPECT_TRUE(store_->AddResults({}).value().empty());
}

// A state change saved while results are counted never writes an older
// count back.
TEST_P(StoreContractTest, UpdateRunExceptProgressKeepsTheStoredProgress) {
  v1::Run run = MakeRun(1, 1, v1::RUNNING);
  Create(run);
  v1::SizeResult wrong = MakeResult(1, 8);
  wrong.set_wrong(4);
  ASSERT_TRUE(store_->AddResults({{run.name(), MakeResult(0, 8)}, {run.name(), wrong}}).ok());
  run.set_state(v1::SUCCEEDED);
  run.set_error("done");
  run.set_sizes_done(0);  // what the caller held before the results
  ASSERT_TRUE(store_->UpdateRunExceptProgress(run).ok());
  const v1::Run got = store_->GetRun(run.name()).value();
  EXPECT_EQ(got.state(), v1::SUCCEEDED);
  EXPECT_EQ(got.error(), "done");
  EXPECT_EQ(got.sizes_done(), 2);
  EXPECT_EQ(got.wrong(), 4u);
  EXPECT_EQ(store_->UpdateRunExceptProgress(MakeRun(9, 1, v1::RUNNING)).code(),
            absl::StatusCode::kNotFound);
}

// A deleted run takes its results with it, frees its request id, and
// leaves every other run and its results as they were; a result written
// for it afterwards is refused as for any run not stored.
TEST_P(StoreContractTest, DeleteRunRemovesTheRunAndOnlyItsResults) {
  Create(MakeRun(1, 1000, v1::SUCCEEDED, "req-1"));
  Create(MakeRun(2, 2000, v1::SUCCEEDED));
  ASSERT_TRUE(store_->AddResults({{"runs/0001", MakeResult(0, 8)},
                                  {"runs/0001", MakeResult(1, 64)},
                                  {"runs/0002", MakeResult(0, 8)}})
                  .ok());
  ASSERT_TRUE(store_->DeleteRun("runs/0001").ok());
  EXPECT_EQ(store_->GetRun("runs/0001").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListResults("runs/0001").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->FindRunByRequestId("req-1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Sequences(store_->ListResults("runs/0002").value()), ElementsAre(0));
  const Store::RunPage page = store_->ListRuns(10, "", v1::RUN_STATE_UNSPECIFIED).value();
  ASSERT_EQ(page.runs.size(), 1u);
  EXPECT_EQ(page.runs[0].name(), "runs/0002");
  EXPECT_EQ(store_->AddResults({{"runs/0001", MakeResult(2, 8)}}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->AddResult("runs/0001", MakeResult(2, 8)).status().code(),
            absl::StatusCode::kNotFound);
  // Not even a row of the refused writes is left behind.
  Create(MakeRun(1, 3000, v1::RUNNING, "req-1"));
  EXPECT_TRUE(store_->ListResults("runs/0001").value().empty());
  absl::Status again = store_->DeleteRun("runs/0404");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr("runs/0404"));
}

TEST_P(StoreContractTest, FinishedRunsAreListedNewestFirstWithTheirTimes) {
  v1::Run ended = MakeRun(1, 1000, v1::FAILED);
  ended.mutable_end_time()->set_seconds(7);
  Create(ended);
  Create(MakeRun(2, 2000, v1::RUNNING));
  Create(MakeRun(3, 3000, v1::CANCELLED));
  Create(MakeRun(4, 4000, v1::QUEUED));
  Create(MakeRun(5, 5000, v1::SUCCEEDED));
  Create(MakeRun(6, 6000, v1::SCHEDULED));
  const std::vector<Store::FinishedRun> finished = store_->ListFinishedRuns().value();
  std::vector<std::string> names;
  for (const Store::FinishedRun& run : finished) names.push_back(run.name);
  EXPECT_THAT(names, ElementsAre("runs/0005", "runs/0003", "runs/0001"));
  EXPECT_EQ(finished[2].create_time_ns, 1000);
  EXPECT_EQ(finished[2].end_time_ns, 7'000'000'000);
  EXPECT_EQ(finished[0].end_time_ns, 0);
}

// A cell's change: the workflow's own fields and that cell, the other
// cells as stored; a whole put after it is the truth again.
TEST_P(StoreContractTest, AWorkflowsCellIsWrittenAlone) {
  v1::Workflow workflow;
  workflow.set_name("workflows/a");
  workflow.set_kind("matrix");
  for (int i = 0; i < 3; ++i) workflow.add_cells()->set_label(absl::StrCat("cell ", i));
  v1::Workflow head = workflow;
  head.clear_cells();
  head.set_cells_done(1);
  v1::WorkflowCell cell = workflow.cells(2);
  cell.set_state(v1::RUNNING);
  EXPECT_EQ(store_->PutWorkflowCell(head, 2, cell).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->PutWorkflow(workflow).ok());
  ASSERT_TRUE(store_->PutWorkflowCell(head, 2, cell).ok());
  v1::Workflow expected = workflow;
  expected.set_cells_done(1);
  *expected.mutable_cells(2) = cell;
  EXPECT_TRUE(Same(store_->ListWorkflows().value()[0], expected));
  ASSERT_TRUE(store_->PutWorkflow(workflow).ok());
  EXPECT_TRUE(Same(store_->ListWorkflows().value()[0], workflow));
}

// Workflows: written through whole on every change, listed newest first,
// a report's page apart from the row, deleted with its page.
TEST_P(StoreContractTest, WorkflowsAreKeptWholeAndListedNewestFirst) {
  auto make = [](const std::string& name, int64_t seconds) {
    v1::Workflow w;
    w.set_name(name);
    w.mutable_create_time()->set_seconds(seconds);
    w.set_kind("sweep");
    return w;
  };
  ASSERT_TRUE(store_->PutWorkflow(make("workflows/a", 10)).ok());
  ASSERT_TRUE(store_->PutWorkflow(make("workflows/b", 20)).ok());
  v1::Workflow changed = make("workflows/a", 10);
  changed.set_state(v1::WORKFLOW_SUCCEEDED);
  changed.set_version(7);
  ASSERT_TRUE(store_->PutWorkflow(changed).ok());
  std::vector<v1::Workflow> listed = store_->ListWorkflows().value();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name(), "workflows/b");
  EXPECT_TRUE(Same(listed[1], changed));

  EXPECT_EQ(store_->GetWorkflowReport("workflows/a").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->PutWorkflowReport("workflows/zz", "x").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->PutWorkflowReport("workflows/a", "<html>").ok());
  ASSERT_TRUE(store_->PutWorkflow(changed).ok());  // a later write keeps the page
  EXPECT_EQ(store_->GetWorkflowReport("workflows/a").value(), "<html>");

  ASSERT_TRUE(store_->DeleteWorkflow("workflows/a").ok());
  EXPECT_EQ(store_->DeleteWorkflow("workflows/a").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetWorkflowReport("workflows/a").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListWorkflows().value().size(), 1u);
  EXPECT_EQ(store_->PutWorkflow(make("runs/x", 1)).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, ACommitAppliesEveryWriteInOrderTogether) {
  v1::Run run = MakeRun(1, 1000, v1::QUEUED, "req-1");
  v1::Run started = run;
  started.set_state(v1::RUNNING);
  started.set_sizes_done(7);  // not written: the results own the progress
  std::vector<Store::Write> batch;
  batch.push_back(Store::CreateRunWrite{run});
  batch.push_back(Store::UpdateRunWrite{started, /*with_progress=*/false});
  batch.push_back(Store::AddResultsWrite{{{"runs/0001", MakeResult(0, 8)},
                                          {"runs/0001", MakeResult(1, 16)},
                                          {"runs/0001", MakeResult(0, 8)}}});
  batch.push_back(Store::UpsertWorkersWrite{{MakeWorker("a", v1::READY)}});
  batch.push_back(Store::SetWorkerSecretHashWrite{"workers/a", "hash-a", absl::UnixEpoch()});
  absl::StatusOr<std::vector<Store::WriteResult>> done = store_->Commit(batch);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->size(), batch.size());
  EXPECT_THAT((*done)[2].inserted, ElementsAre(true, true, false));
  EXPECT_TRUE((*done)[0].inserted.empty());
  const v1::Run stored = store_->GetRun("runs/0001").value();
  EXPECT_EQ(stored.state(), v1::RUNNING);
  EXPECT_EQ(stored.sizes_done(), 2);
  EXPECT_THAT(Sequences(store_->ListResults("runs/0001").value()), ElementsAre(0, 1));
  EXPECT_EQ(store_->ListWorkers().value().size(), 1u);
  EXPECT_EQ(store_->ListWorkerCredentials().value().at("workers/a").secret_hash, "hash-a");
}

TEST_P(StoreContractTest, ACommitWithARefusedWriteKeepsNothingOfIt) {
  Create(MakeRun(1, 1000, v1::RUNNING, ""));
  ASSERT_TRUE(store_->UpsertWorker(MakeWorker("a", v1::READY)).ok());
  std::vector<Store::Write> batch;
  batch.push_back(Store::CreateRunWrite{MakeRun(2, 2000, v1::QUEUED, "")});
  batch.push_back(Store::AddResultsWrite{{{"runs/0001", MakeResult(0, 8)}}});
  batch.push_back(Store::DeleteWorkerWrite{"workers/a"});
  batch.push_back(Store::UpdateRunWrite{MakeRun(9, 9000, v1::RUNNING, ""), false});  // unknown
  batch.push_back(Store::CreateRunWrite{MakeRun(3, 3000, v1::QUEUED, "")});
  const absl::StatusOr<std::vector<Store::WriteResult>> done = store_->Commit(batch);
  EXPECT_TRUE(absl::IsNotFound(done.status())) << done.status();
  EXPECT_THAT(std::string(done.status().message()), HasSubstr("runs/0009"));
  EXPECT_TRUE(absl::IsNotFound(store_->GetRun("runs/0002").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->GetRun("runs/0003").status()));
  EXPECT_TRUE(store_->ListResults("runs/0001").value().empty());
  EXPECT_EQ(store_->GetRun("runs/0001").value().sizes_done(), 0);
  EXPECT_EQ(store_->ListWorkers().value().size(), 1u);
}

TEST_P(StoreContractTest, ACommitRefusesWhatItsMethodRefuses) {
  Create(MakeRun(1, 1000, v1::RUNNING, "req-1"));
  const auto refused = [&](Store::Write write) {
    std::vector<Store::Write> batch;
    batch.push_back(std::move(write));
    return store_->Commit(batch).status().code();
  };
  EXPECT_EQ(refused(Store::CreateRunWrite{MakeRun(1, 1000, v1::QUEUED, "")}),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(refused(Store::CreateRunWrite{MakeRun(2, 1000, v1::QUEUED, "req-1")}),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(refused(Store::AddResultsWrite{{{"runs/0001", MakeResult(-1, 8)}}}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused(Store::AddResultsWrite{{{"runs/0009", MakeResult(0, 8)}}}),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(refused(Store::UpsertWorkersWrite{{MakeWorker("", v1::READY)}}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused(Store::SetWorkerSecretHashWrite{"workers/a", "", absl::UnixEpoch()}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused(Store::DeleteWorkerWrite{"workers/nobody"}), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->Commit({}).ok());
}

INSTANTIATE_TEST_SUITE_P(Implementations, StoreContractTest,
                         testing::Values(Kind::kMemory, Kind::kSqlite),
                         [](const testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kMemory ? "Memory"
                                                              : "Sqlite";
                         });

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// What only the SQLite store promises beyond the shared contract: the file
// outlives the process, a result acknowledged before kill -9 is still there,
// several connections share one file, and the schema is versioned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/store/store.h"
#include "tests/unit/store/store_test_util.h"

namespace collbench {
namespace {

using store_test::MakeResult;
using store_test::MakeRun;
using store_test::MakeWorker;
using store_test::Sequences;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using SqliteStoreTest = store_test::SqliteFileTest;

TEST_F(SqliteStoreTest, ReopenedStoreHasEverything) {
  v1::Run run = MakeRun(1, 10, v1::RUNNING, "req");
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(run).ok());
    ASSERT_TRUE(store->CreateRun(MakeRun(2, 20, v1::SUCCEEDED)).ok());
    ASSERT_TRUE(store->AddResult(run.name(), MakeResult(0, 8)).ok());
    ASSERT_TRUE(store->AddResult(run.name(), MakeResult(1, 16)).ok());
    ASSERT_TRUE(store->UpsertWorker(MakeWorker("a", v1::BUSY)).ok());
    ASSERT_TRUE(
        store->SetWorkerSecretHash("workers/a", "hash-a", absl::FromUnixSeconds(1700000000)).ok());
  }
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->GetRun(run.name())->DebugString(), run.DebugString());
  EXPECT_EQ(store->FindRunByRequestId("req")->name(), run.name());
  EXPECT_EQ(store->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED)->runs.size(), 2u);
  EXPECT_EQ(store->ListUnfinishedRuns()->size(), 1u);
  EXPECT_THAT(Sequences(*store->ListResults(run.name())), ElementsAre(0, 1));
  ASSERT_EQ(store->ListWorkers()->size(), 1u);
  EXPECT_EQ(store->ListWorkers()->front().state(), v1::BUSY);
  EXPECT_EQ(store->ListWorkerCredentials()->at("workers/a").secret_hash, "hash-a");
  EXPECT_EQ(store->ListWorkerCredentials()->at("workers/a").issue_time,
            absl::FromUnixSeconds(1700000000));
  // Duplicates are still recognised after the restart.
  EXPECT_EQ(store->AddResult(run.name(), MakeResult(1, 16)).value(), false);
}

// The coordinator acks a result once AddResult returns; kill -9 right after
// must not lose it. The child opens its own connection (none crosses fork),
// adds results and dies by SIGKILL without closing anything.
TEST_F(SqliteStoreTest, ResultsAddedBeforeKill9Survive) {
  const v1::Run run = MakeRun(1, 10, v1::RUNNING);
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(run).ok());
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path());
    if (!store.ok()) _exit(2);
    for (int sequence = 0; sequence < 10; ++sequence) {
      if (!(*store)->AddResult(run.name(), MakeResult(sequence, 8)).ok()) {
        _exit(3);
      }
    }
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child exited with " << WEXITSTATUS(status);
  // Not checkpointed: the results live only in the write-ahead log.
  EXPECT_TRUE(std::filesystem::exists(path() + "-wal"));
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Sequences(*store->ListResults(run.name())),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
}

TEST_F(SqliteStoreTest, SecondStoreOnTheFileSeesWritesAtOnce) {
  std::unique_ptr<Store> first = Open();
  std::unique_ptr<Store> second = Open();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->CreateRun(MakeRun(1, 10, v1::RUNNING)).ok());
  ASSERT_TRUE(first->AddResult("runs/0001", MakeResult(0, 8)).ok());
  EXPECT_EQ(second->ListResults("runs/0001")->size(), 1u);
  EXPECT_EQ(second->AddResult("runs/0001", MakeResult(0, 8)).value(), false);
  EXPECT_EQ(second->CreateRun(MakeRun(1, 10, v1::RUNNING)).code(),
            absl::StatusCode::kAlreadyExists);
}

// Two connections contend for the write lock; the busy timeout makes them
// take turns instead of failing.
TEST_F(SqliteStoreTest, TwoStoresWriteConcurrently) {
  std::unique_ptr<Store> stores[] = {Open(), Open()};
  ASSERT_NE(stores[0], nullptr);
  ASSERT_NE(stores[1], nullptr);
  ASSERT_TRUE(stores[0]->CreateRun(MakeRun(1, 10, v1::RUNNING)).ok());
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        if (!stores[t % 2]
                 ->AddResult("runs/0001", MakeResult(t * 25 + i, 8))
                 .ok()) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(failures, ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(stores[1]->ListResults("runs/0001")->size(), 100u);
}

TEST_F(SqliteStoreTest, CreatesMissingParentFolders) {
  const std::string nested = dir_.path() + "/a/b/store.db";
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(nested);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(std::filesystem::exists(nested));
}

TEST_F(SqliteStoreTest, UsesWriteAheadLog) {
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(QueryDirectly("PRAGMA journal_mode"), "wal");
}

TEST_F(SqliteStoreTest, SchemaVersionIsRecordedOnce) {
  ASSERT_NE(Open(), nullptr);
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) || ':' || MAX(version) "
                          "FROM schema_version"),
            "6:6");
}

// A store file of schema 2 (progress only inside each run's serialized
// row) opens as the current schema with every run's progress where it was.
TEST_F(SqliteStoreTest, Schema2FileKeepsItsRunsProgress) {
  v1::Run run = MakeRun(1, 10, v1::SUCCEEDED);
  run.set_sizes_done(5);
  run.set_wrong(2);
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(run).ok());
  }
  // Back to what schema 2 had: no progress columns, version 2.
  QueryDirectly("ALTER TABLE runs DROP COLUMN sizes_done");
  QueryDirectly("ALTER TABLE runs DROP COLUMN wrong");
  QueryDirectly("DROP TABLE workflows");
  QueryDirectly("DROP TABLE workflow_cells");
  QueryDirectly("DROP TABLE baselines");
  QueryDirectly("DROP TABLE schedules");
  QueryDirectly("DELETE FROM schema_version WHERE version >= 3");
  ASSERT_EQ(QueryDirectly("SELECT MAX(version) FROM schema_version"), "2");
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryDirectly("SELECT MAX(version) FROM schema_version"), "6");
  EXPECT_EQ(store->GetRun(run.name())->DebugString(), run.DebugString());
  // And counting goes on from there.
  ASSERT_TRUE(store->AddResults({{run.name(), MakeResult(5, 8)}}).ok());
  EXPECT_EQ(store->GetRun(run.name())->sizes_done(), 6);
}

// Workflows and a report's page are kept across a reopen (a coordinator
// restart), and a schema-3 file gains the workflows table.
TEST_F(SqliteStoreTest, WorkflowsSurviveAReopen) {
  v1::Workflow workflow;
  workflow.set_name("workflows/suite-1");
  workflow.set_state(v1::WORKFLOW_RUNNING);
  workflow.add_cells()->set_label("a");
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutWorkflow(workflow).ok());
    ASSERT_TRUE(store->PutWorkflowReport(workflow.name(), "<!DOCTYPE html>page").ok());
  }
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<v1::Workflow>> listed = store->ListWorkflows();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].DebugString(), workflow.DebugString());
  EXPECT_EQ(*store->GetWorkflowReport(workflow.name()), "<!DOCTYPE html>page");

  store.reset();
  QueryDirectly("DROP TABLE workflows");
  QueryDirectly("DROP TABLE workflow_cells");
  QueryDirectly("DROP TABLE baselines");
  QueryDirectly("DROP TABLE schedules");
  QueryDirectly("DELETE FROM schema_version WHERE version >= 4");
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryDirectly("SELECT MAX(version) FROM schema_version"), "6");
  EXPECT_TRUE(store->ListWorkflows()->empty());
}

// A cell's change writes that cell and the workflow's own fields: the
// row's whole copy is not written again, and a reopen reads the workflow as
// it was last changed. A schema-5 file (no cell rows) opens with its
// workflows whole, and their cells' changes then go to the new rows.
TEST_F(SqliteStoreTest, AWorkflowsCellChangeWritesThatCellAlone) {
  v1::Workflow workflow;
  workflow.set_name("workflows/matrix-1");
  workflow.set_state(v1::WORKFLOW_RUNNING);
  for (int i = 0; i < 3; ++i) workflow.add_cells()->set_label(absl::StrCat("cell ", i));
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutWorkflow(workflow).ok());
  }
  // Back to schema 5, the workflow's row as that schema wrote it.
  QueryDirectly("DROP TABLE workflow_cells");
  QueryDirectly("ALTER TABLE workflows DROP COLUMN head");
  QueryDirectly("DELETE FROM schema_version WHERE version >= 6");
  const std::string whole = QueryDirectly("SELECT hex(data) FROM workflows");
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ((*store->ListWorkflows())[0].DebugString(), workflow.DebugString());

  v1::Workflow head = workflow;
  head.clear_cells();
  head.set_cells_done(1);
  head.set_version(2);
  v1::WorkflowCell cell = workflow.cells(1);
  cell.set_run("runs/x");
  cell.set_state(v1::SUCCEEDED);
  ASSERT_TRUE(store->PutWorkflowCell(head, 1, cell).ok());
  EXPECT_EQ(QueryDirectly("SELECT hex(data) FROM workflows"), whole);  // not written again
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) FROM workflow_cells"), "1");
  v1::Workflow expected = workflow;
  expected.set_cells_done(1);
  expected.set_version(2);
  *expected.mutable_cells(1) = cell;
  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ((*store->ListWorkflows())[0].DebugString(), expected.DebugString());
  // Put whole again, it is the truth: the cell rows go; deleted, all goes.
  ASSERT_TRUE(store->PutWorkflow(workflow).ok());
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) FROM workflow_cells"), "0");
  EXPECT_EQ((*store->ListWorkflows())[0].DebugString(), workflow.DebugString());
  ASSERT_TRUE(store->PutWorkflowCell(head, 1, cell).ok());
  ASSERT_TRUE(store->DeleteWorkflow(workflow.name()).ok());
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) FROM workflow_cells"), "0");
}

// Baselines and schedules are kept across a reopen, and a schema-4 file
// gains their tables.
TEST_F(SqliteStoreTest, BaselinesAndSchedulesSurviveAReopen) {
  v1::Baseline baseline;
  baseline.set_name("baselines/nightly");
  baseline.add_runs("runs/a");
  baseline.add_entries()->set_key_text("allreduce 1024");
  v1::Schedule schedule;
  schedule.set_name("schedules/hourly");
  schedule.mutable_spec()->set_every_seconds(3600);
  {
    std::unique_ptr<Store> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutBaseline(baseline).ok());
    ASSERT_TRUE(store->PutSchedule(schedule).ok());
    EXPECT_EQ(store->PutBaseline(v1::Baseline()).code(), absl::StatusCode::kInvalidArgument);
  }
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->GetBaseline("baselines/nightly")->DebugString(), baseline.DebugString());
  ASSERT_EQ(store->ListSchedules()->size(), 1u);
  EXPECT_EQ((*store->ListSchedules())[0].DebugString(), schedule.DebugString());
  ASSERT_TRUE(store->DeleteBaseline("baselines/nightly").ok());
  EXPECT_EQ(store->GetBaseline("baselines/nightly").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteSchedule("schedules/none").code(), absl::StatusCode::kNotFound);

  store.reset();
  QueryDirectly("DROP TABLE baselines");
  QueryDirectly("DROP TABLE schedules");
  QueryDirectly("DROP TABLE workflow_cells");
  QueryDirectly("ALTER TABLE workflows DROP COLUMN head");
  QueryDirectly("DELETE FROM schema_version WHERE version >= 5");
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryDirectly("SELECT MAX(version) FROM schema_version"), "6");
  EXPECT_TRUE(store->ListBaselines()->empty());
}

TEST_F(SqliteStoreTest, NewerSchemaIsFailedPrecondition) {
  ASSERT_NE(Open(), nullptr);
  QueryDirectly("INSERT INTO schema_version VALUES (99, 0)");
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("99"));
  EXPECT_THAT(store.status().message(), HasSubstr(path()));
}

TEST_F(SqliteStoreTest, FileThatIsNotADatabaseIsAnErrorNamingIt) {
  std::ofstream(path()) << "this is not an SQLite database, just some text "
                           "long enough to fill a header page";
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path());
  EXPECT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(path()));
}

}  // namespace
}  // namespace collbench

// SPDX-License-Identifier: Apache-2.0
// Builders and a scratch folder shared by the store tests.
#ifndef COLLBENCH_TESTS_UNIT_STORE_STORE_TEST_UTIL_H_
#define COLLBENCH_TESTS_UNIT_STORE_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"
#include "server/store/store.h"

namespace collbench::store_test {

// A run named "runs/NNNN" (zero-padded, so names sort like ids) created at
// `create_time_ns`, with a spec worth round-tripping.
inline v1::Run MakeRun(int id, int64_t create_time_ns, v1::RunState state,
                       const std::string& request_id = "") {
  v1::Run run;
  run.set_name(absl::StrFormat("runs/%04d", id));
  run.set_state(state);
  run.set_request_id(request_id);
  run.mutable_create_time()->set_seconds(create_time_ns / 1'000'000'000);
  run.mutable_create_time()->set_nanos(create_time_ns % 1'000'000'000);
  v1::RunSpec& spec = *run.mutable_spec();
  spec.set_operation("allreduce");
  spec.set_ranks(4);
  spec.add_sizes_bytes(8);
  spec.add_sizes_bytes(1 << 20);
  (*spec.mutable_labels())["id"] = absl::StrCat(id);
  run.set_sizes_total(2);
  return run;
}

inline int64_t CreateTimeNs(const v1::Run& run) {
  return run.create_time().seconds() * 1'000'000'000 +
         run.create_time().nanos();
}

// A result for `bytes` with a small histogram.
inline v1::SizeResult MakeResult(int64_t sequence, uint64_t bytes) {
  v1::SizeResult result;
  result.set_sequence(sequence);
  result.set_operation("allreduce");
  result.set_bytes(bytes);
  result.set_avg_s(1e-6 * static_cast<double>(sequence + 1));
  result.mutable_histogram()->set_sub_buckets(64);
  (*result.mutable_histogram()->mutable_counts())[640] = 10;
  return result;
}

inline v1::Worker MakeWorker(const std::string& id, v1::WorkerState state) {
  v1::Worker worker;
  worker.set_name("workers/" + id);
  worker.set_state(state);
  worker.set_slots(8);
  worker.mutable_inventory()->set_host_id("host-" + id);
  return worker;
}

inline std::vector<int64_t> Sequences(
    const std::vector<v1::SizeResult>& results) {
  std::vector<int64_t> sequences;
  for (const v1::SizeResult& result : results) {
    sequences.push_back(result.sequence());
  }
  return sequences;
}

// A fresh folder under testing::TempDir(), removed with everything in it.
class TempStoreDir {
 public:
  // Named after the running test, so tests never share a folder.
  TempStoreDir() {
    const testing::TestInfo* test =
        testing::UnitTest::GetInstance()->current_test_info();
    std::string name = absl::StrCat(test->test_suite_name(), ".", test->name());
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = absl::StrCat(testing::TempDir(), "/collbench_store_", getpid(), "_",
                         name);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempStoreDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempStoreDir(const TempStoreDir&) = delete;
  TempStoreDir& operator=(const TempStoreDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A SQLite store file in a fresh folder, opened through the store and
// read directly.
class SqliteFileTest : public testing::Test {
 protected:
  std::string path() const { return dir_.path() + "/store.db"; }

  std::unique_ptr<Store> Open() {
    absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Runs `sql` on the file directly, as an operator with the sqlite3 shell
  // would (a connection of its own: it sees what is committed, and only
  // that), and returns the first column of its first row as text ("" if no
  // row).
  std::string QueryDirectly(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    std::string value;
    const int rc = sqlite3_step(statement);
    EXPECT_TRUE(rc == SQLITE_ROW || rc == SQLITE_DONE) << sqlite3_errmsg(db);
    if (rc == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    }
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return value;
  }

  TempStoreDir dir_;
};

}  // namespace collbench::store_test

#endif  // COLLBENCH_TESTS_UNIT_STORE_STORE_TEST_UTIL_H_

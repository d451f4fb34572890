// SPDX-License-Identifier: Apache-2.0
// The SQLite store on a file system that fills up: a write is refused with
// ResourceExhausted naming the store, nothing of it is kept, reads go on,
// the file stays intact, and writes work again once there is space.
//
// The full disk is a VFS registered as SQLite's default for the test: it
// passes every call to the real default VFS, except that while the disk is
// "full" every write fails with SQLITE_FULL, which is what the unix VFS
// answers when write(2) reports ENOSPC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <string>

#include "server/store/store.h"
#include "tests/unit/store/store_test_util.h"

namespace collbench {
namespace {

using store_test::MakeResult;
using store_test::MakeRun;
using store_test::MakeWorker;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The VFS's state. Test-only globals: SQLite calls the VFS through plain
// function pointers.
std::atomic<bool> disk_full{false};
sqlite3_vfs* real_vfs = nullptr;

// Our file, followed in the same allocation by the real VFS's file.
struct FullDiskFile {
  sqlite3_file base;
  sqlite3_file* real;
};

sqlite3_file* Real(sqlite3_file* file) { return reinterpret_cast<FullDiskFile*>(file)->real; }

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* out, int n, sqlite3_int64 offset) {
  return Real(f)->pMethods->xRead(Real(f), out, n, offset);
}
int Write(sqlite3_file* f, const void* data, int n, sqlite3_int64 offset) {
  if (disk_full) return SQLITE_FULL;
  return Real(f)->pMethods->xWrite(Real(f), data, n, offset);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) { return Real(f)->pMethods->xSync(Real(f), flags); }
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int remove) { return Real(f)->pMethods->xShmUnmap(Real(f), remove); }
int Fetch(sqlite3_file* f, sqlite3_int64 offset, int n, void** out) {
  return Real(f)->pMethods->xFetch(Real(f), offset, n, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), offset, p);
}

const sqlite3_io_methods kMethods = {
    3,        Close,       Read,     Write,   Truncate,          Sync,
    FileSize, Lock,        Unlock,   CheckReservedLock, FileControl, SectorSize,
    DeviceCharacteristics, ShmMap,   ShmLock, ShmBarrier,        ShmUnmap,    Fetch,
    Unfetch};

int Open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  auto* ours = reinterpret_cast<FullDiskFile*>(file);
  ours->real = reinterpret_cast<sqlite3_file*>(ours + 1);
  ours->real->pMethods = nullptr;
  const int rc = real_vfs->xOpen(real_vfs, name, ours->real, flags, out_flags);
  // SQLite closes a file only if its methods are set.
  ours->base.pMethods = ours->real->pMethods != nullptr ? &kMethods : nullptr;
  return rc;
}

// Registers the full-disk VFS as the default while it lives.
class FullDiskVfs {
 public:
  FullDiskVfs() {
    real_vfs = sqlite3_vfs_find(nullptr);
    vfs_ = *real_vfs;  // every other call goes to the real VFS unchanged
    vfs_.zName = "collbench-full-disk";
    vfs_.szOsFile = static_cast<int>(sizeof(FullDiskFile)) + real_vfs->szOsFile;
    vfs_.xOpen = Open;
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
    disk_full = false;
  }
  ~FullDiskVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(real_vfs, /*makeDflt=*/1);
    disk_full = false;
  }
  void set_full(bool full) { disk_full = full; }

 private:
  sqlite3_vfs vfs_;
};

// The store's file on the full-disk VFS (QueryDirectly reads through it
// too: reads pass).
class SqliteFullDiskTest : public store_test::SqliteFileTest {
 protected:
  FullDiskVfs disk_;
};

TEST_F(SqliteFullDiskTest, WritesAreRefusedNamingTheStoreAndReadsGoOn) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  const v1::Run before = MakeRun(1, 10, v1::RUNNING, "req-1");
  ASSERT_TRUE(store->CreateRun(before).ok());
  ASSERT_TRUE(store->AddResult(before.name(), MakeResult(0, 8)).ok());

  disk_.set_full(true);
  const auto names_full_store = AllOf(HasSubstr("store " + path() + " is full"),
                                      HasSubstr("nothing was written"),
                                      HasSubstr("database or disk is full"));
  absl::Status created = store->CreateRun(MakeRun(2, 20, v1::QUEUED, "req-2"));
  EXPECT_TRUE(absl::IsResourceExhausted(created)) << created;
  EXPECT_THAT(std::string(created.message()), names_full_store);
  v1::Run finished = before;
  finished.set_state(v1::SUCCEEDED);
  absl::Status updated = store->UpdateRun(finished);
  EXPECT_TRUE(absl::IsResourceExhausted(updated)) << updated;
  EXPECT_THAT(std::string(updated.message()), names_full_store);
  absl::StatusOr<bool> added = store->AddResult(before.name(), MakeResult(1, 16));
  EXPECT_TRUE(absl::IsResourceExhausted(added.status())) << added.status();
  absl::Status worker = store->UpsertWorker(MakeWorker("a", v1::READY));
  EXPECT_TRUE(absl::IsResourceExhausted(worker)) << worker;
  // Several rows in one transaction: the COMMIT is what fails.
  absl::Status workers =
      store->UpsertWorkers({MakeWorker("b", v1::READY), MakeWorker("c", v1::READY)});
  EXPECT_TRUE(absl::IsResourceExhausted(workers)) << workers;
  EXPECT_THAT(std::string(workers.message()), names_full_store);

  // Reads answer from what was stored before.
  absl::StatusOr<v1::Run> got = store->GetRun(before.name());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->state(), v1::RUNNING);
  EXPECT_EQ(store->ListRuns(0, "", v1::RUN_STATE_UNSPECIFIED)->runs.size(), 1u);
  EXPECT_EQ(store->ListResults(before.name())->size(), 1u);
  EXPECT_EQ(store->ListWorkers()->size(), 0u);
  EXPECT_TRUE(absl::IsNotFound(store->FindRunByRequestId("req-2").status()));
  EXPECT_EQ(QueryDirectly("PRAGMA integrity_check"), "ok");

  // Space returns: writes work again and are committed (a transaction left
  // open by the failed COMMIT would hide them from another connection).
  disk_.set_full(false);
  ASSERT_TRUE(store->UpsertWorkers({MakeWorker("b", v1::READY), MakeWorker("c", v1::READY)}).ok());
  ASSERT_TRUE(store->CreateRun(MakeRun(2, 20, v1::QUEUED, "req-2")).ok());
  ASSERT_TRUE(store->UpdateRun(finished).ok());
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) FROM runs"), "2");
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) FROM workers"), "2");
  EXPECT_EQ(QueryDirectly("SELECT COUNT(*) FROM results"), "1");
  EXPECT_EQ(QueryDirectly("PRAGMA integrity_check"), "ok");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->GetRun(before.name())->state(), v1::SUCCEEDED);
  EXPECT_EQ(store->FindRunByRequestId("req-2")->name(), "runs/0002");
  EXPECT_EQ(store->ListWorkers()->size(), 2u);
}

TEST_F(SqliteFullDiskTest, OtherErrorsKeepTheirCode) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateRun(MakeRun(1, 10, v1::QUEUED)).ok());
  disk_.set_full(true);
  // A duplicate is refused before anything is written, full disk or not.
  EXPECT_TRUE(absl::IsAlreadyExists(store->CreateRun(MakeRun(1, 10, v1::QUEUED))));
  // An update of no row writes nothing either.
  absl::Status missing = store->UpdateRun(MakeRun(9, 10, v1::QUEUED));
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
}

}  // namespace
}  // namespace collbench

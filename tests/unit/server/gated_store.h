// SPDX-License-Identifier: Apache-2.0
// The in-memory store with a gate on its transactions, for the core's tests:
// a transaction can be held (it waits until released, as a slow fsync
// would) or made to fail (as on a full disk), and the store counts what it
// was given, so a test sees when the coordinator writes and what it waits
// for meanwhile (journal_test.cc, worker_identity_test.cc).
#ifndef COLLBENCH_TESTS_UNIT_SERVER_GATED_STORE_H_
#define COLLBENCH_TESTS_UNIT_SERVER_GATED_STORE_H_

#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/run.pb.h"
#include "server/store/forwarding_store.h"

namespace collbench {

class GatedStore final : public ForwardingStore {
 public:
  // `runs` ("runs/{id}") are stored first, by no transaction it counts.
  explicit GatedStore(const std::vector<std::string>& runs = {})
      : ForwardingStore(NewMemoryStore()) {
    for (const std::string& name : runs) {
      v1::Run run;
      run.set_name(name);
      (void)inner()->CreateRun(run);
    }
  }

  absl::StatusOr<std::vector<WriteResult>> Commit(const std::vector<Write>& writes) override {
    absl::MutexLock lock(&mu_);
    ++entered_;
    auto open = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !held_; };
    mu_.Await(absl::Condition(&open));
    int rows = 0;
    for (const Write& w : writes) {
      if (const auto* results = std::get_if<AddResultsWrite>(&w)) rows += results->rows.size();
    }
    batch_rows_.push_back(rows);
    ++transactions_;
    if (fail_) return absl::ResourceExhaustedError("store test.db is full");
    return ForwardingStore::Commit(writes);
  }

  // Transactions wait from Hold until Release.
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  // While set, every transaction fails (ResourceExhausted) and stores nothing.
  void SetFail(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_ = fail;
  }
  // Waits until `n` transactions have started (held ones included).
  void AwaitEntered(int n) {
    absl::MutexLock lock(&mu_);
    auto entered = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entered_ >= n; };
    mu_.Await(absl::Condition(&entered));
  }
  int entered() {
    absl::MutexLock lock(&mu_);
    return entered_;
  }
  // Results per transaction, in order.
  std::vector<int> batch_rows() {
    absl::MutexLock lock(&mu_);
    return batch_rows_;
  }
  int transactions() {
    absl::MutexLock lock(&mu_);
    return transactions_;
  }

 private:
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
  int transactions_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> batch_rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_SERVER_GATED_STORE_H_

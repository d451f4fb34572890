// SPDX-License-Identifier: Apache-2.0
#include "server/core/no_io_lock.h"

#include <atomic>
#include <set>
#include <string>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace collbench {
namespace {

// The innermost NoIoLock this thread holds, by name; null when none.
thread_local const char* held_lock = nullptr;
std::atomic<int64_t> violations{0};

}  // namespace

NoIoLock::NoIoLock(absl::Mutex* mu, const char* name) : mu_(mu), previous_(held_lock) {
  mu_->Lock();
  held_lock = name;
}

NoIoLock::~NoIoLock() {
  held_lock = previous_;
  mu_->Unlock();
}

void CheckMayBlock(absl::string_view where, absl::string_view call) {
  const char* const lock = held_lock;
  if (lock == nullptr) return;
  const std::string what = absl::StrCat(where, "::", call);
#ifndef NDEBUG
  ABSL_RAW_LOG(FATAL, "%s called while holding %s, a lock requests wait on "
               "(docs/design/threading.md)", what.c_str(), lock);
#endif
  violations.fetch_add(1, std::memory_order_relaxed);
  static absl::Mutex logged_mu(absl::kConstInit);
  static std::set<std::string>* const logged = new std::set<std::string>();
  absl::MutexLock logged_lock(&logged_mu);
  if (logged->insert(what).second) {
    LogError("core.io_under_lock",
             absl::StrCat(what, " called while holding ", lock, ", a lock requests wait on"))
        .Str("call", what)
        .Str("lock", lock);
  }
}

int64_t BlockingUnderLockCount() { return violations.load(std::memory_order_relaxed); }

void NoIoCheckedStore::OnCall(const char* method) { CheckMayBlock("Store", method); }

}  // namespace collbench

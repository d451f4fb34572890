// SPDX-License-Identifier: Apache-2.0
// No disk I/O under a lock that requests wait on
// (docs/design/threading.md#no-io-under-the-locks), checked
// as the program runs rather than promised in a comment.
//
// The run lifecycle's and the worker directory's mutexes are taken with
// NoIoLock, which marks the thread for as long as it holds one. Every call
// the coordinator's core makes to its store goes through a
// NoIoCheckedStore, and every wait for the journal through
// CheckMayBlock(): a call from a marked thread is a violation. In a build
// with assertions (no NDEBUG: the sanitizer tree) a violation aborts with
// what was called under which lock; otherwise it is logged (once per
// method) and counted, and the core's tests assert the count stays 0.
//
// Thread safety: the mark is per thread; the count is atomic.
#ifndef COLLBENCH_SERVER_CORE_NO_IO_LOCK_H_
#define COLLBENCH_SERVER_CORE_NO_IO_LOCK_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/store/forwarding_store.h"

namespace collbench {

// absl::MutexLock that also marks the thread as one that must not block.
// `name` ("RunManager::mu_") is what a violation names; it must outlive
// the lock (a string literal).
class ABSL_SCOPED_LOCKABLE NoIoLock {
 public:
  NoIoLock(absl::Mutex* mu, const char* name) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu);
  ~NoIoLock() ABSL_UNLOCK_FUNCTION();
  NoIoLock(const NoIoLock&) = delete;
  NoIoLock& operator=(const NoIoLock&) = delete;

 private:
  absl::Mutex* const mu_;
  const char* const previous_;
};

// A violation when the calling thread holds a NoIoLock (see the file
// comment); `where` and `call` name what was called ("Store", "GetRun").
void CheckMayBlock(absl::string_view where, absl::string_view call);

// Violations so far in this process (only counted where they do not abort).
int64_t BlockingUnderLockCount();

// A store whose every call is checked with CheckMayBlock first.
class NoIoCheckedStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

 protected:
  void OnCall(const char* method) override;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_NO_IO_LOCK_H_

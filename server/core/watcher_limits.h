// SPDX-License-Identifier: Apache-2.0
// How many run watchers (gRPC WatchRun, GET /v1/runs/{id}:watch) may be
// open at once, in all and per client
// (docs/design/security.md#admission-and-fairness). A client is who
// Authorizer::CallerOf() says: its bearer token, or its address without tokens,
// as for --create-rate. One budget covers both protocols.
//
// A watcher beyond a limit is refused with RESOURCE_EXHAUSTED carrying a
// retry-after (server/core/admission.h): HTTP 429 with Retry-After, or the
// gRPC status. Refusals are counted by reason for /metrics.
//
// Thread safety: every method may be called from any thread.
#ifndef COLLBENCH_SERVER_CORE_WATCHER_LIMITS_H_
#define COLLBENCH_SERVER_CORE_WATCHER_LIMITS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace collbench {

struct WatcherLimitOptions {
  int max_total = 10000;      // open watchers in all; 0: no limit
  int max_per_client = 1000;  // open watchers of one client; 0: no limit
  // Events a watcher may have queued and not yet written; a reader that
  // falls further behind is ended ("too slow") so it slows nobody else.
  int buffer_events = 4096;
};

// Watcher refusals since the start, by reason.
struct WatcherRejections {
  int64_t total = 0;       // --max-watchers reached
  int64_t per_client = 0;  // --max-watchers-per-client reached
  int64_t too_slow = 0;    // ended for falling behind (buffer_events)
  // SSE watches refused over TLS, where each holds an HTTP request thread,
  // because the threads kept for other requests would be taken.
  int64_t threads = 0;
};

class WatcherLimits;

// One open watcher's place in the budget; the place is given back when
// this is destroyed.
class WatcherSlot {
 public:
  WatcherSlot(const WatcherSlot&) = delete;
  WatcherSlot& operator=(const WatcherSlot&) = delete;
  ~WatcherSlot();

 private:
  friend class WatcherLimits;
  WatcherSlot(WatcherLimits* limits, std::string client)
      : limits_(limits), client_(std::move(client)) {}
  WatcherLimits* const limits_;
  const std::string client_;
};

class WatcherLimits {
 public:
  explicit WatcherLimits(WatcherLimitOptions options) : options_(options) {}

  // A place for one more watcher of `client`, or RESOURCE_EXHAUSTED (with
  // a retry-after) naming the limit reached. The limits outlive the slot.
  absl::StatusOr<std::unique_ptr<WatcherSlot>> Acquire(absl::string_view client);
  // A watcher was ended for falling behind.
  void CountTooSlow();
  // An SSE watch was refused for want of a free HTTP request thread (TLS).
  void CountThreadsBusy();

  const WatcherLimitOptions& options() const { return options_; }
  int64_t open() const;
  WatcherRejections rejections() const;

 private:
  friend class WatcherSlot;
  void Release(const std::string& client);

  const WatcherLimitOptions options_;
  mutable absl::Mutex mu_;
  int64_t open_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t, std::less<>> by_client_ ABSL_GUARDED_BY(mu_);
  WatcherRejections rejections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_WATCHER_LIMITS_H_
